"""fold-batchnorm: batch_norm folded into conv / gemm / matmul weights, or rewritten as a
per-channel scale and shift; the compiled numerics stay within 1e-5 of the original."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.builder import Builder
from xdsl.ir import Operation, SSAValue

from compiler.frontend.onnx import import_onnx
from dialects import graph as g
from passes.transforms.fold_batchnorm import FoldBatchnormPass
from tests.support.graph_build import apply_and_compare, build, op_names

rng = np.random.default_rng(2)


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def c(b: Builder, a: np.ndarray) -> SSAValue:
    return b.insert(g.ConstantOp(a)).results[0]


def bn(b: Builder, x: SSAValue | Operation, ch: int, eps: float = 1e-5) -> Operation:
    return b.insert(
        g.BatchNormOp(
            x,
            c(b, rand(ch, lo=0.5, hi=2)),
            c(b, rand(ch)),
            c(b, rand(ch)),
            c(b, rand(ch, lo=0.1, hi=2)),
            epsilon=eps,
        )
    )


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("props", [{}, {"strides": [2, 1], "pads": [1, 0, 1, 2], "group": 2}])
def test_conv(bias: bool, props: dict) -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        w = rand(6, 4 // props.get("group", 1), 3, 3)
        y = b.insert(g.ConvOp(a[0], c(b, w), c(b, rand(6)) if bias else None, **props))
        return [b.insert(g.ReluOp(bn(b, y, 6)))]

    m = build([(2, 4, 7, 7)], fn)
    apply_and_compare(m, FoldBatchnormPass())
    assert op_names(m) == [
        "graph.constant",
        "graph.constant",
        "graph.conv",
        "graph.relu",
        "func.return",
    ]


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("cshape", [None, (5,), (1, 5), (3, 5), (3, 1)])
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_gemm(trans_b: int, cshape: tuple[int, ...] | None, beta: float) -> None:
    w = rand(5, 4) if trans_b else rand(4, 5)
    cv = None if cshape is None else rand(*cshape)
    sc, t, mu, var = rand(5, lo=0.5, hi=2), rand(5), rand(5), rand(5, lo=0.1, hi=2)

    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        y = b.insert(
            g.GemmOp(
                a[0],
                c(b, w),
                None if cv is None else c(b, cv),
                alpha=1.5,
                beta=beta,
                trans_b=trans_b,
            )
        )
        return [b.insert(g.BatchNormOp(y, c(b, sc), c(b, t), c(b, mu), c(b, var)))]

    m = build([(3, 4)], fn)
    out = apply_and_compare(m, FoldBatchnormPass())[0]
    assert "graph.batch_norm" not in op_names(m) and op_names(m).count("graph.gemm") == 1
    assert op_names(m).count("graph.constant") == 2  # the weight and c (or the shift)
    # float64 reference from the original parameters (the same inputs as apply_and_compare)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float64)
    y = 1.5 * x @ (w.T if trans_b else w).astype(np.float64)
    if cv is not None:
        y = y + beta * cv
    ref = (y - mu) / np.sqrt(var.astype(np.float64) + np.float32(1e-5)) * sc + t
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_matmul_and_float64_reference() -> None:
    w, s, t, mu, var = rand(4, 5), rand(5, lo=0.5, hi=2), rand(5), rand(5), rand(5, lo=0.1, hi=2)

    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        y = b.insert(g.MatmulOp(a[0], c(b, w)))
        return [b.insert(g.BatchNormOp(y, c(b, s), c(b, t), c(b, mu), c(b, var), epsilon=1e-3))]

    m = build([(3, 4)], fn)
    out = apply_and_compare(m, FoldBatchnormPass())[0]
    assert op_names(m) == [
        "graph.constant",
        "graph.matmul",
        "graph.constant",
        "graph.add",
        "func.return",
    ]
    x = np.random.default_rng(0).standard_normal((3, 4))
    y = x @ w.astype(np.float64)
    ref = (y - mu) / np.sqrt(var.astype(np.float64) + np.float32(1e-3)) * s + t
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 3, 4, 4)])
def test_scale_shift(shape: tuple[int, ...]) -> None:
    """No foldable producer: x * s + t with (C, 1, ...) constants."""
    m = build([shape], lambda b, a: [bn(b, a[0], 3)])
    apply_and_compare(m, FoldBatchnormPass())
    assert op_names(m) == [
        "graph.constant",
        "graph.constant",
        "graph.mul",
        "graph.add",
        "func.return",
    ]
    consts = [op for op in m.walk() if isinstance(op, g.ConstantOp)]
    assert all(
        op.results[0].type.get_shape() == (3,) + (1,) * (len(shape) - 2)  # type: ignore[attr-defined]
        for op in consts
    )


def test_conv_with_second_user_is_not_folded() -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        y = b.insert(g.ConvOp(a[0], c(b, rand(3, 2, 3, 3)), c(b, rand(3))))
        return [bn(b, y, 3), b.insert(g.ReluOp(y))]

    m = build([(1, 2, 6, 6)], fn)
    apply_and_compare(m, FoldBatchnormPass())
    names = op_names(m)
    assert names.count("graph.conv") == 1 and "graph.batch_norm" not in names
    assert names.count("graph.mul") == 1 and names.count("graph.add") == 1


def test_non_constant_weight_or_params() -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        y = b.insert(g.ConvOp(a[0], a[1], None))
        z = b.insert(g.BatchNormOp(a[2], a[3], a[3], a[3], b.insert(g.AbsOp(a[3]))))
        return [bn(b, y, 3), z]

    m = build([(1, 2, 6, 6), (3, 2, 3, 3), (2, 4), (4,)], fn)
    apply_and_compare(m, FoldBatchnormPass())
    names = op_names(m)
    assert names.count("graph.conv") == 1 and names.count("graph.batch_norm") == 1
    assert names.count("graph.mul") == 1


def test_onnx_conv_bn_relu() -> None:
    w = numpy_helper.from_array(rand(4, 3, 3, 3), "w")
    b = numpy_helper.from_array(rand(4), "b")
    ps = [
        numpy_helper.from_array(a, n)
        for a, n in (
            (rand(4, lo=0.5, hi=2), "s"),
            (rand(4), "t"),
            (rand(4), "mu"),
            (rand(4, lo=0.1), "var"),
        )
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["y", "s", "t", "mu", "var"], ["z"]),
        helper.make_node("Relu", ["z"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cbr",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w, b, *ps],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    m = import_onnx(model)
    apply_and_compare(m, FoldBatchnormPass())
    assert [n for n in op_names(m) if n != "graph.constant"] == [
        "graph.conv",
        "graph.relu",
        "func.return",
    ]


def test_shared_parameter_constant() -> None:
    """One constant used for several parameters (and by another op) is handled once."""

    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        p = c(b, rand(3, lo=0.5, hi=2))
        y = b.insert(g.ConvOp(a[0], c(b, rand(3, 2, 1, 1)), None))
        return [b.insert(g.BatchNormOp(y, p, p, p, p)), b.insert(g.BatchNormOp(a[1], p, p, p, p))]

    m = build([(1, 2, 4, 4), (2, 3)], fn)
    apply_and_compare(m, FoldBatchnormPass())
    assert "graph.batch_norm" not in op_names(m)
