"""Issue 30's transformer set (tests/support/transformer_models.py: GPT-2, Llama with grouped-
query attention and rotary embeddings, Qwen2, BERT, a T5 encoder; symbolic batch and sequence),
each one SymbolicModel (compiler/symbolic_model.py) compiled once for every size and run at
1, 7, 64 and 300 tokens, batch 1 and 3, against onnxruntime on the same model; the decoders also
with a KV cache (a prefill, decode steps)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from compiler.errors import InputError
from compiler.symbolic_model import SymbolicModel, compile_symbolic
from tests.support import transformer_models as tm

SIZES = [(b, s) for b in (1, 3) for s in (1, 7, 64, 300)]
"""(batch, tokens) of every model."""


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


_MODELS: dict[tuple[str, bool], SymbolicModel] = {}
"""One symbolic model per (kind, kv cache) in this process, run at every size its tests ask."""


def _symbolic(kind: str, cache: bool = False) -> SymbolicModel:
    if (kind, cache) not in _MODELS:
        cfg = tm.with_cache(tm.SMALL[kind]) if cache else tm.SMALL[kind]
        dims = {"batch": (1, 4), "seq": (1, 512)} | ({"past": (0, 512)} if cache else {})
        _MODELS[kind, cache] = compile_symbolic(tm.build(cfg), dims, one_compile=True, cache=False)
    return _MODELS[kind, cache]


def _check(model, feeds, symbolic: SymbolicModel) -> None:
    names = [o.name for o in model.graph.output]
    expected = dict(zip(names, _session(model).run(None, feeds), strict=True))
    got = symbolic.run(feeds)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("kind", sorted(tm.SMALL))
@pytest.mark.parametrize("batch,seq", SIZES)
def test_matches_onnxruntime(kind: str, batch: int, seq: int) -> None:
    cfg = tm.SMALL[kind]
    _check(tm.build(cfg), tm.feeds(cfg, batch, seq), _symbolic(kind))


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
@pytest.mark.parametrize("batch,seq,past", [(1, 7, 0), (3, 1, 9)])
def test_kv_cache_matches_onnxruntime(kind: str, batch: int, seq: int, past: int) -> None:
    """The decoders with a KV cache: a prefill (empty past) and a decode step."""
    cfg = tm.with_cache(tm.SMALL[kind])
    _check(tm.build(cfg), tm.feeds(cfg, batch, seq, past), _symbolic(kind, cache=True))


@pytest.mark.parametrize("kind,cache", [(k, False) for k in sorted(tm.SMALL)] + [("llama", True)])
def test_one_compile_serves_every_size(kind: str, cache: bool) -> None:
    """Shape arithmetic, embeddings, masks, heads and the cache all take run-time sizes: the
    model is compiled once (`?` dims), never per size."""
    cfg = tm.with_cache(tm.SMALL[kind]) if cache else tm.SMALL[kind]
    symbolic = _symbolic(kind, cache)
    for batch, seq, past in [(1, 5, 0), (2, 1, 5)] if cache else [(1, 5, 0), (2, 9, 0)]:
        symbolic.run(tm.feeds(cfg, batch, seq, past))
    assert symbolic.one_compile_refused is None
    assert symbolic.once() is not None and symbolic.compiles == 1


def test_specialized_per_size_on_request_and_bounds() -> None:
    """Specialization stays (one_compile=False: one compile per size, a size seen before
    reuses its own); a size outside the bounds is one InputError naming the symbol, the input
    and the axis, before any compile."""
    cfg = tm.SMALL["bert"]
    symbolic = compile_symbolic(
        tm.build(cfg), {"batch": (1, 4), "seq": (1, 64)}, one_compile=False, cache=False
    )
    first = symbolic.run(tm.feeds(cfg, 1, 7))
    again = symbolic.run(tm.feeds(cfg, 1, 7))
    assert symbolic.compiles == 1
    _check(tm.build(cfg), tm.feeds(cfg, 3, 5), symbolic)
    assert symbolic.compiles == 2
    for name, value in first.items():
        np.testing.assert_array_equal(again[name], value)
    with pytest.raises(
        InputError,
        match=r"symbol 'seq' is 65 in input 'input_ids' \(axis 1\), "
        r"outside the bounds 1\.\.64",
    ):
        symbolic.run(tm.feeds(cfg, 1, 65))
    with pytest.raises(InputError, match=r"symbol 'batch' is 5 .* outside the bounds 1\.\.4"):
        symbolic.run(tm.feeds(cfg, 5, 3))
    assert symbolic.compiles == 2
