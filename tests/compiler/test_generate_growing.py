"""compiler/generate_growing.py: greedy decoding over one program compiled for every size (the
past grows one slot per token) gives onnxruntime's tokens on the same model, and compiles once."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from compiler.generate import GenerateError
from compiler.generate_growing import GrowingGenerator
from tests.support import transformer_models as tm


@functools.cache
def _generator(kind: str) -> GrowingGenerator:
    """One generator (one compile) per decoder in this process, shared by the tests."""
    return GrowingGenerator(tm.build(tm.with_cache(tm.SMALL[kind])), cache=False)


@pytest.mark.parametrize("kind,batch", [("gpt2", 1), ("llama", 2), ("qwen2", 1)])
def test_32_greedy_tokens_match_onnxruntime_with_one_compile(kind: str, batch: int) -> None:
    cfg = tm.with_cache(tm.SMALL[kind])
    model = tm.build(cfg)
    prompt = np.random.default_rng(7).integers(0, cfg.vocab, (batch, 5))
    expected = tm.onnxruntime_greedy(model, cfg, prompt, 32)
    gen = _generator(kind)
    got = gen.generate(prompt, 32)
    np.testing.assert_array_equal(got, expected)
    assert len(set(expected[0].tolist())) > 1  # not a constant stream that any bug could match
    assert gen.symbolic.compiles == 1 and len(gen.step_seconds) == 31
    # another prompt length and more tokens: the same program
    longer = np.random.default_rng(8).integers(0, cfg.vocab, (batch, 9))
    np.testing.assert_array_equal(
        gen.generate(longer, 8), tm.onnxruntime_greedy(model, cfg, longer, 8)
    )
    assert gen.symbolic.compiles == 1


def test_prompts_of_different_lengths_are_left_padded_and_masked() -> None:
    cfg = tm.with_cache(tm.SMALL["llama"])
    model = tm.build(cfg)
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, cfg.vocab, 5), rng.integers(0, cfg.vocab, 2)]
    got = _generator("llama").generate(prompts, 12)
    for row, prompt in enumerate(prompts):
        expected = tm.onnxruntime_greedy(model, cfg, prompt[None, :], 12)[0]
        np.testing.assert_array_equal(got[row], expected)


def test_positions_beyond_the_table_and_empty_prompts_are_refused() -> None:
    gen = _generator("gpt2")  # 1,024 learned positions
    with pytest.raises(GenerateError, match=r"need positions up to 1024; the model has 1024"):
        gen.generate([[1, 2, 3, 4, 5]], 1020)
    with pytest.raises(GenerateError, match="non-empty prompts and at least one new token"):
        gen.generate([[]], 4)
