"""Converters of the bitwise operators on integers: BitwiseAnd/Or/Xor/Not, BitShift (opset 28
semantics for every shift amount) and BitCast (float32 <-> int32)."""

from __future__ import annotations

import onnx
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import Attribute

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    text,
    type_name,
)
from dialects import graph as g

_BITWISE: dict[str, type[g.GraphOp]] = {
    "BitwiseAnd": g.AndOp,
    "BitwiseOr": g.OrOp,
    "BitwiseXor": g.XorOp,
}
_WIDTH: dict[Attribute, int] = {i32: 32, i64: 64}


def _integers(imp: Importer, node: onnx.NodeProto) -> list:
    xs = [imp.value(n) for n in node.input]
    for n, x in zip(node.input, xs, strict=True):
        if element_type_of(x) not in _WIDTH:
            raise imp.error(f"input '{n}' must be an integer tensor, got {element_type_of(x)}")
    return xs


@converter(*_BITWISE)
def convert_bitwise(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a, b = _integers(imp, node)
    return [imp.op(_BITWISE[node.op_type](a, b))]


@converter("BitwiseNot")
def convert_bitwise_not(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    (x,) = _integers(imp, node)
    return [imp.op(g.NotOp(x))]


@converter("BitShift")
def convert_bit_shift(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x shifted by y; a y outside [0, bits) gives what the sign extension alone gives (-1 for
    a right shift of a negative x, else 0), so y is clamped before the shift (LLVM's shift by
    the bit width or more is poison) and those lanes are selected apart."""
    x, y = _integers(imp, node)
    direction = text(attrs(node).get("direction", ""))
    if direction not in ("LEFT", "RIGHT"):
        raise imp.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    bits = _WIDTH[element_type_of(x)]
    clamped = imp.op(
        g.MinOp(imp.op(g.MaxOp(y, imp.scalar(0, like=y))), imp.scalar(bits - 1, like=y))
    )
    if direction == "LEFT":
        shifted = imp.op(g.ShiftLeftOp(x, clamped))
        fill = imp.scalar(0, like=x)
    else:
        shifted = imp.op(g.ShiftRightOp(x, clamped))
        fill = imp.op(g.ShiftRightOp(x, imp.scalar(bits - 1, like=x)))  # -1 or 0: the sign
    inside = imp.op(
        g.AndOp(
            imp.op(g.GreaterEqualOp(y, imp.scalar(0, like=y))),
            imp.op(g.LessOp(y, imp.scalar(bits, like=y))),
        )
    )
    return [imp.op(g.WhereOp(inside, shifted, fill))]


_BITCAST: dict[int, tuple[Attribute, str]] = {
    onnx.TensorProto.INT32: (f32, "i32"),
    onnx.TensorProto.FLOAT: (i32, "f32"),
}


@converter("BitCast")
def convert_bitcast(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    to = int(attrs(node)["to"])
    if to not in _BITCAST or element_type_of(x) != _BITCAST[to][0]:
        raise imp.error(
            f"bitcast of {element_type_of(x)} to {type_name(to)} is not supported (FLOAT <-> "
            "INT32 only)"
        )
    return [imp.op(g.BitcastOp(x, to=_BITCAST[to][1]))]
