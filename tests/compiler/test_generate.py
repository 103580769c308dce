"""compiler/generate.py: greedy decoding with a fixed-capacity KV cache gives the tokens
onnxruntime gives driving the same model with a growing cache."""

from __future__ import annotations

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


def test_model_without_cache_is_refused() -> None:
    with pytest.raises(GenerateError, match="no 'attention_mask' input"):
        GreedyGenerator(tm.build(tm.SMALL["gpt2"]), prompt_len=4, new_tokens=2)


def test_wrong_prompt_shape_is_refused() -> None:
    cfg = tm.with_cache(tm.SMALL["gpt2"])
    gen = GreedyGenerator(tm.build(cfg), prompt_len=4, new_tokens=2)
    with pytest.raises(GenerateError, match=r"prompt_ids has shape \[1, 3\]; .* \[1, 4\]"):
        gen.generate(np.zeros((1, 3), np.int64))
