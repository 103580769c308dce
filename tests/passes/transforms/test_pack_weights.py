"""pack-weights: a matmul's constant B is stored as panels [N/P, K, P] and the product taken
panel by panel, put back in row order; numerics unchanged; narrow, shallow or off-panel weights
stay."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import DiagnosticException

from compiler.registry import get_pass
from dialects import graph as g
from passes.schedule.default import REDUCTION_VECTORS
from passes.transforms.fold_constants import prop
from passes.transforms.pack_weights import MIN_DEPTH, PackWeightsPass, working_set
from tests.support.graph_build import apply_and_compare, build, op_names

rng = np.random.default_rng(7)
WIDTH = 8
PANEL = REDUCTION_VECTORS * WIDTH


def _matmul_with(w: np.ndarray, a_shape: list[int]):
    def fn(b: Builder, args: list[SSAValue]):
        c = b.insert(g.ConstantOp(w)).results[0]
        return [b.insert(g.MatmulOp(args[0], c))]

    return build([a_shape], fn)


def test_registered_after_pad_weights() -> None:
    from compiler.pipelines import LEVELS

    assert get_pass("pack-weights") is PackWeightsPass
    graph = list(LEVELS["graph"])
    assert graph.index("pad-weights") < graph.index("pack-weights")


def test_a_row_times_a_constant_runs_on_panels() -> None:
    k, n = MIN_DEPTH, 5 * PANEL
    w = rng.standard_normal((k, n)).astype(np.float32)
    m = _matmul_with(w, [1, 1, k])  # a decode step's hidden state: [batch 1, 1 token, K]
    apply_and_compare(m, PackWeightsPass(width=WIDTH, min_bytes=0))
    (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
    assert isinstance(mm.b.owner, g.ConstantOp)
    panels = g.constant_value(mm.b.owner)
    assert panels.shape == (5, k, PANEL)
    for j in range(5):  # panel j holds columns j*P .. j*P+P-1, row by row
        np.testing.assert_array_equal(panels[j], w[:, j * PANEL : (j + 1) * PANEL])
    assert list(mm.a.type.get_shape()) == [1, k]  # type: ignore[attr-defined]
    assert list(mm.result.type.get_shape()) == [5, 1, PANEL]  # type: ignore[attr-defined]
    names = op_names(m)
    assert names.count("graph.reshape") == 2  # the row in, the outputs back to [1, 1, N]
    assert "graph.transpose" not in names  # one row: [N/P, 1, P] is already in row order
    assert names.count("graph.constant") == 1  # the [K, N] original is gone


def test_rows_are_put_back_in_order_by_a_transpose() -> None:
    k, n = MIN_DEPTH, 3 * PANEL
    w = rng.standard_normal((k, n)).astype(np.float32)
    m = _matmul_with(w, [2, 5, k])  # batch 2, 5 tokens: 10 rows
    apply_and_compare(m, PackWeightsPass(width=WIDTH, min_bytes=0))
    (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
    assert list(mm.a.type.get_shape()) == [10, k]  # type: ignore[attr-defined]
    assert list(mm.result.type.get_shape()) == [3, 10, PANEL]  # type: ignore[attr-defined]
    (t,) = [op for op in m.walk() if isinstance(op, g.TransposeOp)]
    assert list(prop(t, "perm")) == [1, 0, 2]
    assert list(t.result.type.get_shape()) == [10, 3, PANEL]  # type: ignore[attr-defined]


@pytest.mark.parametrize("keep", [17 * PANEL - 5, 17 * PANEL - 1])
def test_a_product_trimmed_by_pad_weights_keeps_only_its_columns(keep: int) -> None:
    """pad-weights' slice back to N is folded into the transposes back: the whole panels and the
    part of the next, concatenated (which bufferize writes in place), no transpose of padding."""
    from xdsl.context import Context

    from passes.transforms.pad_weights import PadWeightsPass

    k = MIN_DEPTH
    w = rng.standard_normal((k, keep)).astype(np.float32)
    m = _matmul_with(w, [2, 5, k])
    PadWeightsPass(width=PANEL).apply(Context(), m)  # [K, keep] padded to whole panels, sliced
    apply_and_compare(m, PackWeightsPass(width=WIDTH, min_bytes=0))
    names = op_names(m)
    assert names.count("graph.transpose") == 2
    assert names.count("graph.concat") == 1
    assert "graph.slice" in names  # the panels taken, not a slice of the result
    transposed = [op for op in m.walk() if isinstance(op, g.TransposeOp)]
    widths = sorted(list(t.result.type.get_shape()) for t in transposed)  # type: ignore[attr-defined]
    assert widths == sorted([[10, keep // PANEL, PANEL], [10, 1, keep % PANEL]])
    (ret,) = [op for op in m.walk() if op.name == "func.return"]
    assert list(ret.operands[0].type.get_shape()) == [2, 5, keep]  # type: ignore[attr-defined]


def test_a_two_d_row_needs_no_reshape_in() -> None:
    k, n = MIN_DEPTH, 2 * PANEL
    m = _matmul_with(rng.standard_normal((k, n)).astype(np.float32), [1, k])
    apply_and_compare(m, PackWeightsPass(width=WIDTH, min_bytes=0))
    assert op_names(m).count("graph.reshape") == 1


def test_narrow_shallow_or_off_panel_weights_stay() -> None:
    k = MIN_DEPTH
    for w, a_shape in (
        (rng.standard_normal((k, PANEL)), [1, k]),  # one panel: already that layout
        (rng.standard_normal((k // 2, 4 * PANEL)), [1, k // 2]),  # too shallow
        (rng.standard_normal((k, 4 * PANEL + WIDTH)), [1, k]),  # not whole panels
    ):
        m = _matmul_with(w.astype(np.float32), a_shape)
        before = str(m)
        PackWeightsPass(width=WIDTH, min_bytes=0).apply(None, m)  # type: ignore[arg-type]
        assert str(m) == before


def test_a_width_off_a_power_of_two_is_refused() -> None:
    m = _matmul_with(rng.standard_normal((MIN_DEPTH, 4 * PANEL)).astype(np.float32), [1, 64])
    with pytest.raises(DiagnosticException, match="pack-weights: option 'width'"):
        PackWeightsPass(width=3).apply(None, m)  # type: ignore[arg-type]
    with pytest.raises(DiagnosticException, match="pack-weights: option 'min_bytes'"):
        PackWeightsPass(min_bytes=-1).apply(None, m)  # type: ignore[arg-type]


@pytest.mark.parametrize("rows", [1, 8])
def test_a_product_whose_working_set_fits_the_l2_stays(rows: int) -> None:
    # the working set is B plus A's rows and the result's: B alone under the limit still packs
    # when the rows push the whole over it
    w = rng.standard_normal((MIN_DEPTH, 4 * PANEL)).astype(np.float32)
    m = _matmul_with(w, [rows, MIN_DEPTH])
    working = w.nbytes + rows * (MIN_DEPTH + 4 * PANEL) * 4
    assert working_set(w, rows) == working
    before = str(m)
    PackWeightsPass(width=WIDTH, min_bytes=working).apply(None, m)  # type: ignore[arg-type]
    assert str(m) == before  # a working set of min_bytes: stays
    PackWeightsPass(width=WIDTH, min_bytes=working - 1).apply(None, m)  # type: ignore[arg-type]
    (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
    assert list(mm.b.type.get_shape()) == [4, MIN_DEPTH, PANEL]  # type: ignore[attr-defined]


def test_by_default_only_weights_larger_than_this_cpus_l2_are_packed() -> None:
    from passes.schedule.cpu_target import cpu_target

    l2 = cpu_target().l2.size
    small = rng.standard_normal((MIN_DEPTH, 4 * PANEL)).astype(np.float32)
    assert small.nbytes <= l2
    m = _matmul_with(small, [1, MIN_DEPTH])
    before = str(m)
    PackWeightsPass(width=WIDTH).apply(None, m)  # type: ignore[arg-type]
    assert str(m) == before
    k = 256
    n = -(-(l2 // (4 * k) + 1) // PANEL) * PANEL  # whole panels, just over the L2
    big = np.ones((k, n), np.float32)
    m = _matmul_with(big, [1, k])
    PackWeightsPass(width=WIDTH).apply(None, m)  # type: ignore[arg-type]
    (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
    assert list(mm.b.type.get_shape()) == [n // PANEL, k, PANEL]  # type: ignore[attr-defined]


def _gemm_with(w: np.ndarray, rows: int, **props):
    bias = rng.standard_normal(w.shape[1]).astype(np.float32)

    def fn(b: Builder, args: list[SSAValue]):
        wc = b.insert(g.ConstantOp(w)).results[0]
        c = b.insert(g.ConstantOp(bias)).results[0]
        return [b.insert(g.GemmOp(args[0], wc, c, **props))]

    return build([[rows, w.shape[0]]], fn)


def test_a_linear_layer_gemm_is_packed_and_keeps_its_bias() -> None:
    w = rng.standard_normal((MIN_DEPTH, 3 * PANEL)).astype(np.float32)
    for rows in (1, 4):  # a classifier at batch 1 (AlexNet's fc6-8), and a batch
        m = _gemm_with(w, rows)
        apply_and_compare(m, PackWeightsPass(width=WIDTH, min_bytes=0))
        names = op_names(m)
        assert "graph.gemm" not in names and names.count("graph.add") == 1
        (mm,) = [op for op in m.walk() if isinstance(op, g.MatmulOp)]
        assert list(mm.b.type.get_shape()) == [3, MIN_DEPTH, PANEL]  # type: ignore[attr-defined]


def test_a_scaled_gemm_stays() -> None:
    w = rng.standard_normal((MIN_DEPTH, 3 * PANEL)).astype(np.float32)
    m = _gemm_with(w, 1, alpha=g.f32_attr(0.5))
    before = str(m)
    PackWeightsPass(width=WIDTH, min_bytes=0).apply(None, m)  # type: ignore[arg-type]
    assert str(m) == before
