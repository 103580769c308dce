"""compiler/generate.py: greedy decoding with a fixed-capacity KV cache gives the tokens
onnxruntime gives driving the same model with a growing cache."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from compiler.generate import GenerateError, GreedyGenerator
from tests.support import transformer_models as tm


@pytest.mark.parametrize("kind,batch", [("gpt2", 1), ("llama", 2), ("qwen2", 1)])
def test_greedy_tokens_match_onnxruntime(kind: str, batch: int) -> None:
    cfg = tm.with_cache(tm.SMALL[kind])
    model = tm.build(cfg)
    prompt = np.random.default_rng(7).integers(0, cfg.vocab, (batch, 5))
    expected = tm.onnxruntime_greedy(model, cfg, prompt, 32)
    got = GreedyGenerator(model, prompt_len=5, new_tokens=32, batch=batch).generate(prompt)
    assert got.shape == (batch, 32)
    np.testing.assert_array_equal(got, expected)
    assert len(set(expected[0].tolist())) > 1  # not a constant stream that any bug could match


def test_prompts_shorter_than_the_capacity_and_of_different_lengths() -> None:
    """Left-padded, masked prompts: each row gives the tokens of its own unpadded run."""
    cfg = tm.with_cache(tm.SMALL["llama"])
    model = tm.build(cfg)
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, cfg.vocab, 5), rng.integers(0, cfg.vocab, 2)]
    gen = GreedyGenerator(model, prompt_len=8, new_tokens=16, batch=2)
    got = gen.generate(prompts)
    for row, prompt in enumerate(prompts):
        expected = tm.onnxruntime_greedy(model, cfg, prompt[None, :], 16)[0]
        np.testing.assert_array_equal(got[row], expected)


def test_prompt_buckets() -> None:
    from compiler.generate import prompt_bucket

    assert [prompt_bucket(n) for n in (1, 8, 9, 16, 17, 100)] == [8, 8, 16, 16, 32, 128]


def test_model_without_cache_is_refused() -> None:
    with pytest.raises(GenerateError, match="no 'attention_mask' input"):
        GreedyGenerator(tm.build(tm.SMALL["gpt2"]), prompt_len=4, new_tokens=2)


def test_wrong_prompt_shape_is_refused() -> None:
    cfg = tm.with_cache(tm.SMALL["gpt2"])
    gen = GreedyGenerator(tm.build(cfg), prompt_len=4, new_tokens=2)
    with pytest.raises(GenerateError, match=r"prompt 0 has 5 tokens; this generator takes 1 to 4"):
        gen.generate(np.zeros((1, 5), np.int64))
    with pytest.raises(GenerateError, match="2 prompts given; this generator takes 1"):
        gen.generate([[1, 2], [3]])


def test_positions_beyond_the_models_table_are_refused_before_any_compile() -> None:
    """GPT-2 reads learned positions at position_ids: a generation whose last position is past
    its table is refused up front (the run would refuse it at that step, after the work)."""
    model = tm.build(tm.with_cache(replace(tm.SMALL["gpt2"], positions=32)))

    def no_compile(shapes):
        raise AssertionError("compiled")

    with pytest.raises(GenerateError) as err:
        GreedyGenerator(model, prompt_len=8, new_tokens=25, compile_fn=no_compile)
    assert re.fullmatch(
        r"25 new tokens after a prompt of up to 8 need positions up to 32, beyond what the "
        r"model allows: Gather node '#13' reads 'embed_positions_\d+' at them along axis 0, "
        r"which has 32",
        str(err.value),
    )
    compiled = []
    GreedyGenerator(model, prompt_len=8, new_tokens=24, compile_fn=compiled.append)
    assert len(compiled) == 2  # prefill and step: positions up to 31 fit
