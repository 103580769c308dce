"""pad-weights: a matmul's constant B whose width is off the vector width is stored padded to
it and the product sliced back; numerics unchanged; narrow, shallow or aligned ones stay."""

from __future__ import annotations

import numpy as np
from xdsl.builder import Builder
from xdsl.ir import SSAValue

from compiler.registry import get_pass
from dialects import graph as g
from passes.transforms.pad_weights import MIN_COLUMNS_PER_LANE, PadWeightsPass
from tests.support.graph_build import apply_and_compare, build, op_names

rng = np.random.default_rng(5)


def _matmul_with(w: np.ndarray, rows: int = 3):
    def fn(b: Builder, args: list[SSAValue]):
        c = b.insert(g.ConstantOp(w)).results[0]
        return [b.insert(g.MatmulOp(args[0], c))]

    return build([[2, rows, w.shape[0]]], fn)


def test_registered_and_after_transpose_weights() -> None:
    from compiler.pipelines import LEVELS

    assert get_pass("pad-weights") is PadWeightsPass
    graph = list(LEVELS["graph"])
    assert graph.index("transpose-weights") < graph.index("pad-weights")


def test_an_odd_width_is_padded_and_sliced_back() -> None:
    n = 8 * MIN_COLUMNS_PER_LANE + 3  # off any width of 8 lanes
    w = rng.standard_normal((64, n)).astype(np.float32)
    m = _matmul_with(w)
    apply_and_compare(m, PadWeightsPass(width=8))
    (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
    assert isinstance(mm.b.owner, g.ConstantOp)
    padded = g.constant_value(mm.b.owner)
    assert padded.shape == (64, n + 5)
    np.testing.assert_array_equal(padded[:, :n], w)
    assert not padded[:, n:].any()
    assert op_names(m).count("graph.slice") == 1
    assert op_names(m).count("graph.constant") == 1  # the unpadded original is gone


def test_aligned_narrow_or_shallow_weights_stay() -> None:
    for w in (
        rng.standard_normal((64, 8 * MIN_COLUMNS_PER_LANE)),  # already a multiple of 8
        rng.standard_normal((64, 8 * MIN_COLUMNS_PER_LANE - 3)),  # too narrow to pay
        rng.standard_normal((16, 8 * MIN_COLUMNS_PER_LANE + 3)),  # too shallow
    ):
        m = _matmul_with(w.astype(np.float32))
        before = str(m)
        PadWeightsPass(width=8).apply(None, m)  # type: ignore[arg-type]
        assert str(m) == before
