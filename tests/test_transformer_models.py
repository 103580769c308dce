"""Issue 30's transformer set (tests/support/transformer_models.py: GPT-2, Llama with grouped-
query attention and rotary embeddings, Qwen2, BERT; symbolic batch and sequence), compiled for
several sizes (specialized with input_shapes) and compared with onnxruntime on the same model."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from compiler.model import compile_model
from tests.support import transformer_models as tm

SIZES = [(1, 1), (3, 7), (1, 64)]
"""(batch, tokens) of every model; one model also runs 300 tokens (test_long_sequence)."""


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _check(model, feeds) -> None:
    names = [o.name for o in model.graph.output]
    expected = dict(zip(names, _session(model).run(None, feeds), strict=True))
    got = compile_model(model, {k: list(v.shape) for k, v in feeds.items()}).run(feeds)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("kind", sorted(tm.SMALL))
@pytest.mark.parametrize("batch,seq", SIZES)
def test_matches_onnxruntime(kind: str, batch: int, seq: int) -> None:
    cfg = tm.SMALL[kind]
    _check(tm.build(cfg), tm.feeds(cfg, batch, seq))


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
@pytest.mark.parametrize("batch,seq,past", [(1, 7, 0), (3, 1, 9)])
def test_kv_cache_matches_onnxruntime(kind: str, batch: int, seq: int, past: int) -> None:
    """The decoders with a KV cache: a prefill (empty past) and a decode step."""
    cfg = tm.with_cache(tm.SMALL[kind])
    _check(tm.build(cfg), tm.feeds(cfg, batch, seq, past))


def test_long_sequence() -> None:
    cfg = tm.SMALL["llama"]
    _check(tm.build(cfg), tm.feeds(cfg, 1, 300))
