"""simplify: structural and algebraic no-ops go, numerics of the compiled module unchanged,
and look-alikes that are not no-ops stay."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.builder import Builder
from xdsl.ir import Operation, SSAValue

from compiler.frontend.onnx import import_onnx
from dialects import graph as g
from passes.transforms.fold_constants import prop
from passes.transforms.simplify import SimplifyPass
from tests.support.graph_build import apply_and_compare, build, op_names


def c(b: Builder, a: np.ndarray) -> SSAValue:
    return b.insert(g.ConstantOp(np.asarray(a, dtype=np.float32))).results[0]


NOOPS = {
    "identity": lambda b, x: b.insert(g.IdentityOp(x)),
    "dropout": lambda b, x: b.insert(g.DropoutOp(x)),
    "cast": lambda b, x: b.insert(g.CastOp(x)),
    "reshape": lambda b, x: b.insert(g.ReshapeOp(x, [2, 3])),
    "flatten": lambda b, x: b.insert(g.FlattenOp(x, axis=1)),
    "squeeze": lambda b, x: b.insert(g.SqueezeOp(x, axes=[])),
    "unsqueeze": lambda b, x: b.insert(g.UnsqueezeOp(x, axes=[])),
    "transpose": lambda b, x: b.insert(g.TransposeOp(x, perm=[0, 1])),
    "transpose2": lambda b, x: b.insert(
        g.TransposeOp(b.insert(g.TransposeOp(x, perm=[1, 0])), perm=[1, 0])
    ),
    "pad": lambda b, x: b.insert(g.PadOp(x, pads=[0, 0, 0, 0])),
    "mul1": lambda b, x: b.insert(g.MulOp(x, c(b, np.ones(3)))),
    "1mul": lambda b, x: b.insert(g.MulOp(c(b, np.ones((1, 1))), x)),
    "add0": lambda b, x: b.insert(g.AddOp(x, c(b, [0.0]))),
    "0add": lambda b, x: b.insert(g.AddOp(c(b, np.zeros((2, 3))), x)),
    "sub0": lambda b, x: b.insert(g.SubOp(x, c(b, [0.0]))),
    "div1": lambda b, x: b.insert(g.DivOp(x, c(b, np.ones((2, 1))))),
}


@pytest.mark.parametrize("name", sorted(NOOPS))
def test_noop_removed(name: str) -> None:
    """relu(noop(x)): only the relu is left (and no dead constant)."""
    m = build([(2, 3)], lambda b, a: [b.insert(g.ReluOp(NOOPS[name](b, a[0])))])
    apply_and_compare(m, SimplifyPass())
    assert op_names(m) == ["graph.relu", "func.return"]


KEPT = {
    # broadcasting grows x: x * ones(2, 3) with x (3,) is a broadcast, not a no-op
    "mul_broadcast": (
        [(3,)],
        lambda b, a: b.insert(g.MulOp(a[0], c(b, np.ones((2, 3))))),
        "graph.mul",
    ),
    "add_broadcast": (
        [(3,)],
        lambda b, a: b.insert(g.AddOp(c(b, np.zeros((4, 1))), a[0])),
        "graph.add",
    ),
    "zero_minus_x": ([(3,)], lambda b, a: b.insert(g.SubOp(c(b, [0.0]), a[0])), "graph.sub"),
    "one_over_x": ([(3,)], lambda b, a: b.insert(g.DivOp(c(b, [1.0]), a[0])), "graph.div"),
    "not_all_ones": (
        [(3,)],
        lambda b, a: b.insert(g.MulOp(a[0], c(b, [1.0, 2.0, 1.0]))),
        "graph.mul",
    ),
    "non_constant": ([(3,), (3,)], lambda b, a: b.insert(g.MulOp(a[0], a[1])), "graph.mul"),
    "pad": ([(3,)], lambda b, a: b.insert(g.PadOp(a[0], pads=[1, 0])), "graph.pad"),
    "transpose": (
        [(2, 3)],
        lambda b, a: b.insert(g.TransposeOp(a[0], perm=[1, 0])),
        "graph.transpose",
    ),
    "reshape": ([(2, 3)], lambda b, a: b.insert(g.ReshapeOp(a[0], [3, 2])), "graph.reshape"),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_kept(name: str) -> None:
    shapes, fn, kept = KEPT[name]
    m = build(shapes, lambda b, a: [fn(b, a)])
    apply_and_compare(m, SimplifyPass())
    assert kept in op_names(m)


def test_cast_from_i64_is_kept() -> None:
    from xdsl.dialects.builtin import TensorType, i64

    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        idx = b.insert(g.ConstantOp(np.arange(3, dtype=np.int64)))
        assert idx.results[0].type == TensorType(i64, [3])
        return [b.insert(g.AddOp(a[0], b.insert(g.CastOp(idx))))]

    m = build([(3,)], fn)
    SimplifyPass().apply(None, m)  # type: ignore[arg-type]
    assert "graph.cast" in op_names(m)


def test_transposes_compose() -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        t = b.insert(g.TransposeOp(a[0], perm=[1, 0, 2]))
        return [b.insert(g.TransposeOp(t, perm=[2, 1, 0]))]

    m = build([(2, 3, 4)], fn)
    apply_and_compare(m, SimplifyPass())
    ts = [op for op in m.walk() if isinstance(op, g.TransposeOp)]
    assert len(ts) == 1 and prop(ts[0], "perm") == (2, 0, 1)


def test_transpose_inner_with_second_user_stays() -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        t = b.insert(g.TransposeOp(a[0], perm=[1, 0]))
        return [b.insert(g.TransposeOp(t, perm=[1, 0])), b.insert(g.ReluOp(t))]

    m = build([(2, 3)], fn)
    apply_and_compare(m, SimplifyPass())
    assert op_names(m) == ["graph.transpose", "graph.relu", "func.return"]


def test_reshapes_compose() -> None:
    def fn(b: Builder, a: list[SSAValue]) -> list[Operation]:
        r = b.insert(g.UnsqueezeOp(b.insert(g.FlattenOp(a[0], axis=2)), axes=[0]))
        r = b.insert(g.ReshapeOp(b.insert(g.ReshapeOp(r, [6, 4])), [4, 6]))
        return [b.insert(g.ReluOp(b.insert(g.ReshapeOp(r, [2, 3, 4]))))]

    m = build([(2, 3, 4)], fn)
    apply_and_compare(m, SimplifyPass())
    # the reshapes compose down to one reshape of x to x's own shape, which disappears
    assert op_names(m) == ["graph.relu", "func.return"]


def test_onnx_model() -> None:
    nodes = [
        helper.make_node("Identity", ["x"], ["a"]),
        helper.make_node("Dropout", ["a"], ["b"]),
        helper.make_node("Transpose", ["b"], ["c"], perm=[0, 2, 1]),
        helper.make_node("Transpose", ["c"], ["d"], perm=[0, 2, 1]),
        helper.make_node("Relu", ["d"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "s",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, 4])],
    )
    m = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    apply_and_compare(m, SimplifyPass())
    assert op_names(m) == ["graph.relu", "func.return"]


def test_pow_by_a_small_constant_becomes_products_or_a_sqrt() -> None:
    for exponent, expect in ((2.0, ["graph.mul"]), (3.0, ["graph.mul"] * 2), (0.5, ["graph.sqrt"])):

        def fn(b: Builder, args: list[SSAValue], e: float = exponent):
            x = b.insert(g.AbsOp(args[0])).results[0]  # sqrt and pow agree on NaN, not atol
            c = b.insert(g.ConstantOp(np.full((), e, np.float32))).results[0]
            return [b.insert(g.PowOp(x, c))]

        m = build([[4, 8]], fn)
        apply_and_compare(m, SimplifyPass())
        names = op_names(m)
        assert "graph.pow" not in names and "graph.constant" not in names
        assert [n for n in names if n in ("graph.mul", "graph.sqrt")] == expect
    # another exponent, or one that broadcasts x to a larger shape, stays a pow

    def odd(b: Builder, args: list[SSAValue]):
        c = b.insert(g.ConstantOp(np.full((), 2.5, np.float32))).results[0]
        return [b.insert(g.PowOp(args[0], c))]

    m = build([[4, 8]], odd)
    SimplifyPass().apply(None, m)  # type: ignore[arg-type]
    assert "graph.pow" in op_names(m)
