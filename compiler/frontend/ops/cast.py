"""Cast and CastLike, to every element type a model may name.

The graph computes in f32, i64, i32 and i1. A cast to a type the graph widens
(compiler/frontend/importer.py's WIDENED_ELEMENTS) keeps that type's semantics in the wider one:
to int8/uint8/int16/uint16/uint32 the value wraps into the narrow type's range (as a C cast of an
integer, and numpy's astype, do); to float16 it is rounded to float16's precision and range
(overflow to infinity, subnormals included), in float32. A cast to bfloat16 or float64 stays
float32: bfloat16 is not rounded and float64 is computed with float32's precision.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    CAST_TARGETS,
    SUPPORTED_ELEMENTS,
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    type_name,
)
from dialects import graph as g

_WRAPPED: dict[int, tuple[str, int, bool]] = {
    onnx.TensorProto.INT8: ("i32", 8, True),
    onnx.TensorProto.UINT8: ("i32", 8, False),
    onnx.TensorProto.INT16: ("i32", 16, True),
    onnx.TensorProto.UINT16: ("i32", 16, False),
    onnx.TensorProto.UINT32: ("i64", 32, False),
}
"""Narrow integer type -> (the graph type computing it, its bits, whether it is signed)."""

_AS_FLOAT32 = (onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)


def wrap_integer(imp: Importer, x: SSAValue, graph_type: str, bits: int, signed: bool) -> SSAValue:
    """x (integer) reduced modulo 2**bits into the narrow type's range."""
    v = imp.op(g.CastOp(x, to=graph_type)) if str(element_type_of(x)) != graph_type else x
    m = imp.scalar(2**bits, like=v)
    r = imp.op(g.SubOp(v, imp.op(g.MulOp(imp.op(g.DivOp(v, m)), m))))  # sign of v (truncation)
    r = imp.op(g.WhereOp(imp.op(g.LessOp(r, imp.scalar(0, like=v))), imp.op(g.AddOp(r, m)), r))
    if signed:
        half = imp.scalar(2 ** (bits - 1), like=v)
        r = imp.op(g.WhereOp(imp.op(g.GreaterEqualOp(r, half)), imp.op(g.SubOp(r, m)), r))
    return r


def round_to_float16(imp: Importer, x: SSAValue) -> SSAValue:
    """x (float32) rounded to the nearest float16 value, ties to even, kept in float32.

    Normal range: Veltkamp splitting, c = x * (2**13 + 1), x16 = c - (c - x), keeps x's top 11
    significant bits, rounded to nearest even (exact float32 arithmetic; the elementwise
    lowering uses no fast-math flags that could reassociate it). Below 2**-14 float16 is
    subnormal with a fixed spacing of 2**-24: round(x / 2**-24) * 2**-24. From 65520 on, the
    value rounds to infinity."""
    c = imp.op(g.MulOp(x, imp.scalar(2.0**13 + 1)))
    normal = imp.op(g.SubOp(c, imp.op(g.SubOp(c, x))))
    step = imp.scalar(2.0**-24)
    subnormal = imp.op(g.MulOp(imp.op(g.RoundOp(imp.op(g.DivOp(x, step)))), step))
    mag = imp.op(g.AbsOp(x))
    y = imp.op(g.WhereOp(imp.op(g.LessOp(mag, imp.scalar(2.0**-14))), subnormal, normal))
    inf = imp.op(
        g.WhereOp(imp.op(g.LessOp(x, imp.scalar(0.0))), imp.scalar(-np.inf), imp.scalar(np.inf))
    )
    return imp.op(g.WhereOp(imp.op(g.GreaterEqualOp(mag, imp.scalar(65520.0))), inf, y))


@converter("Cast", "CastLike")
def convert_cast(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    if node.op_type == "CastLike":
        like = imp.lookup(node.input[1])
        if isinstance(like, SSAValue):
            return [imp.op(g.CastOp(x, to=str(element_type_of(like))))]
        to: int = onnx.helper.np_dtype_to_tensor_dtype(like.dtype)
    else:
        to = int(attrs(node)["to"])
    if to in CAST_TARGETS:
        return [imp.op(g.CastOp(x, to=CAST_TARGETS[to]))]
    if to in _WRAPPED:
        graph_type, bits, signed = _WRAPPED[to]
        if element_type_of(x) == f32:  # C semantics: truncate toward zero, then wrap
            x = imp.op(g.CastOp(x, to="i64"))
        elif element_type_of(x) == i1:
            return [imp.op(g.CastOp(x, to=graph_type))]
        return [wrap_integer(imp, x, graph_type, bits, signed)]
    if to == onnx.TensorProto.FLOAT16:
        return [round_to_float16(imp, imp.op(g.CastOp(x, to="f32")))]
    if to in _AS_FLOAT32:
        return [imp.op(g.CastOp(x, to="f32"))]
    raise imp.error(
        f"cast of a computed tensor to {type_name(to)} is not supported (to {SUPPORTED_ELEMENTS}, "
        "BFLOAT16 and DOUBLE)"
    )
