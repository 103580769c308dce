"""transpose-weights: a Gemm's constant B given transposed is stored untransposed; the compiled
numerics stay the same, and anything else is left alone."""

from __future__ import annotations

import numpy as np
from xdsl.builder import Builder
from xdsl.ir import SSAValue

from compiler.registry import get_pass
from dialects import graph as g
from passes.transforms.fold_constants import prop
from passes.transforms.transpose_weights import TransposeWeightsPass
from tests.support.graph_build import apply_and_compare, build, op_names

rng = np.random.default_rng(3)
W = rng.standard_normal((24, 40)).astype(np.float32)  # (N, K): PyTorch Linear's weight


def _const(b: Builder, a: np.ndarray) -> SSAValue:
    return b.insert(g.ConstantOp(a)).results[0]


def _gemms(m) -> list[g.GemmOp]:
    return [op for op in m.walk() if isinstance(op, g.GemmOp)]


def test_registered_and_in_the_graph_pipeline() -> None:
    from compiler.pipelines import LEVELS

    assert get_pass("transpose-weights") is TransposeWeightsPass
    graph = list(LEVELS["graph"])
    assert graph.index("fold-constants") < graph.index("transpose-weights")


def test_a_transposed_constant_weight_is_stored_untransposed() -> None:
    def fn(b: Builder, args: list[SSAValue]):
        w, bias = _const(b, W), _const(b, np.arange(24, dtype=np.float32))
        return [b.insert(g.GemmOp(args[0], w, bias, alpha=0.5, beta=2.0, trans_b=1))]

    m = build([[3, 40]], fn)
    apply_and_compare(m, TransposeWeightsPass())
    (gemm,) = _gemms(m)
    assert prop(gemm, "trans_b") == 0
    assert (prop(gemm, "alpha"), prop(gemm, "beta")) == (0.5, 2.0)
    assert isinstance(gemm.b.owner, g.ConstantOp)
    np.testing.assert_array_equal(g.constant_value(gemm.b.owner), W.T)
    assert op_names(m).count("graph.constant") == 2  # the transposed original is gone


def test_a_weight_that_is_an_input_or_already_untransposed_stays() -> None:
    def fn(b: Builder, args: list[SSAValue]):
        w = _const(b, W.T.copy())
        return [
            b.insert(g.GemmOp(args[0], w, None)),
            b.insert(g.GemmOp(args[0], args[1], None, trans_b=1)),
        ]

    m = build([[3, 40], [24, 40]], fn)
    before = str(m)
    TransposeWeightsPass().apply(None, m)  # type: ignore[arg-type]
    assert str(m) == before


def test_a_shared_weight_stays_for_its_other_user() -> None:
    def fn(b: Builder, args: list[SSAValue]):
        w = _const(b, W)
        gemm = b.insert(g.GemmOp(args[0], w, None, trans_b=1))
        return [gemm, b.insert(g.ReluOp(w))]

    m = build([[3, 40]], fn)
    apply_and_compare(m, TransposeWeightsPass())
    assert op_names(m).count("graph.constant") == 2
