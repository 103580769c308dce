"""Converters of the linear quantization operators: QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, and the integer products MatMulInteger, ConvInteger, QLinearMatMul and
QLinearConv (int32 accumulation, exact).

8- and 16-bit integer tensors are computed in int32 (compiler/frontend/importer.py's
WIDENED_ELEMENTS): every value fits, so the results are exact, and the model's inputs and outputs
keep their declared types at the boundary. The quantized type of a value is known at import time
(the zero point's type, or `output_dtype`), so converters clamp to its range here.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    type_name,
)
from compiler.frontend.ops.conv_pool import conv
from dialects import graph as g

_QUANTIZED: dict[int, type] = {
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.UINT16: np.uint16,
}
"""The quantized element types supported (computed in int32)."""


def _quantized_type(imp: Importer, node: onnx.NodeProto, zp_index: int) -> type:
    """The quantized numpy type: the zero point's, else `output_dtype`, else uint8."""
    if imp.has(node, zp_index):
        zp = imp.lookup(node.input[zp_index])
        if not isinstance(zp, np.ndarray):
            raise imp.error(f"the zero point ('{node.input[zp_index]}') must be a constant")
        if zp.dtype not in [np.dtype(t) for t in _QUANTIZED.values()]:
            raise imp.error(
                f"zero point of type {zp.dtype} is not supported (int8, uint8, int16, uint16)"
            )
        return zp.dtype.type
    out = int(attrs(node).get("output_dtype", 0))
    if out == 0:
        return np.uint8
    if out not in _QUANTIZED:
        raise imp.error(
            f"output_dtype {type_name(out)} is not supported (int8, uint8, int16, uint16)"
        )
    return _QUANTIZED[out]


def _fit(imp: Importer, param: SSAValue, shape: tuple[int, ...], axis: int) -> SSAValue | None:
    """`param` broadcast against a tensor of `shape`: one element as a scalar, or a 1-D one of
    the length of `axis` along that axis; None if it is neither."""
    ps = imp.shape_of(param)
    if int(np.prod(ps, dtype=np.int64)) == 1:
        return imp.op(g.ReshapeOp(param, [])) if ps else param
    axis %= len(shape)
    if len(ps) == 1 and ps[0] == shape[axis]:
        return imp.op(g.ReshapeOp(param, [ps[0] if d == axis else 1 for d in range(len(shape))]))
    return None


def _along(
    imp: Importer, node: onnx.NodeProto, param: SSAValue, x_shape: tuple[int, ...]
) -> SSAValue:
    """A scale or zero point broadcast against x: per tensor (one element), per axis (1-D along
    `axis`), or blocked (x's shape with `axis` divided into blocks of `block_size`)."""
    shape = imp.shape_of(param)
    n = int(np.prod(shape, dtype=np.int64))
    a = attrs(node)
    rank = len(x_shape)
    block = int(a.get("block_size", 0))
    if n == 1 and block == 0:
        return imp.op(g.ReshapeOp(param, [])) if shape else param
    axis = int(a.get("axis", 1))
    if not -rank <= axis < rank:
        raise imp.error(f"axis {axis} is out of range for an input of rank {rank}")
    axis %= rank
    if block == 0:
        fitted = _fit(imp, param, x_shape, axis)
        if fitted is None:
            raise imp.error(
                f"a per-axis scale/zero point must be 1-D of length {x_shape[axis]} (axis {axis}),"
                f" got shape {list(shape)}"
            )
        return fitted
    blocks = -(-x_shape[axis] // block)
    want = [blocks if d == axis else x_shape[d] for d in range(rank)]
    if list(shape) != want:
        raise imp.error(
            f"a blocked scale/zero point (block_size {block}) must have shape {want}, got {list(shape)}"
        )
    index = np.arange(x_shape[axis], dtype=np.int64) // block
    return imp.op(g.GatherOp(param, imp.constant(index), axis=axis))


@converter("QuantizeLinear")
def convert_quantize(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """saturate(round_half_even(x / scale) + zero_point), in float32, then int32."""
    qtype = _quantized_type(imp, node, 2)
    info = np.iinfo(qtype)
    x = imp.value(node.input[0])
    if element_type_of(x) != f32:
        x = imp.op(g.CastOp(x, to="f32"))
    shape = imp.shape_of(x)
    scale = _along(imp, node, imp.value(node.input[1], np.float32), shape)
    y = imp.op(g.RoundOp(imp.op(g.DivOp(x, scale))))
    if imp.has(node, 2):
        y = imp.op(g.AddOp(y, _along(imp, node, imp.value(node.input[2], np.float32), shape)))
    y = imp.op(g.ClipOp(y, min=float(info.min), max=float(info.max)))
    return [imp.op(g.CastOp(y, to="i32"))]


@converter("DequantizeLinear")
def convert_dequantize(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(x - zero_point) * scale in float32 (x - zero_point is exact in int32)."""
    x = imp.value(node.input[0])
    if element_type_of(x) not in (i32,):
        raise imp.error(
            f"input x must be an 8-, 16- or 32-bit integer tensor, got {element_type_of(x)}"
        )
    shape = imp.shape_of(x)
    if imp.has(node, 2):
        zp = _along(imp, node, imp.value(node.input[2], np.int32), shape)
        x = imp.op(g.SubOp(x, zp))
    xf = imp.op(g.CastOp(x, to="f32"))
    scale = _along(imp, node, imp.value(node.input[1], np.float32), shape)
    return [imp.op(g.MulOp(xf, scale))]


@converter("DynamicQuantizeLinear")
def convert_dynamic_quantize(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """uint8 quantization over the range [min(x, 0), max(x, 0)]: y, its scale and zero point."""
    x = imp.value(node.input[0])
    rank = len(imp.shape_of(x))
    axes = list(range(rank))
    zero = imp.scalar(0.0)
    lo = imp.op(
        g.MinOp(
            imp.op(g.NegOp(imp.op(g.ReduceMaxOp(imp.op(g.NegOp(x)), axes=axes, keepdims=0)))), zero
        )
    )
    hi = imp.op(g.MaxOp(imp.op(g.ReduceMaxOp(x, axes=axes, keepdims=0)), zero))
    scale = imp.op(g.DivOp(imp.op(g.SubOp(hi, lo)), imp.scalar(255.0)))
    zp = imp.op(
        g.ClipOp(imp.op(g.RoundOp(imp.op(g.NegOp(imp.op(g.DivOp(lo, scale)))))), min=0.0, max=255.0)
    )
    y = imp.op(g.AddOp(imp.op(g.RoundOp(imp.op(g.DivOp(x, scale)))), zp))
    y = imp.op(g.ClipOp(y, min=0.0, max=255.0))
    return [imp.op(g.CastOp(y, to="i32")), scale, imp.op(g.CastOp(zp, to="i32"))]


def _int32(imp: Importer, name: str) -> SSAValue:
    v = imp.value(name, np.int32) if isinstance(imp.lookup(name), np.ndarray) else imp.value(name)
    if element_type_of(v) != i32:
        raise imp.error(
            f"input '{name}' must be an 8- or 16-bit integer tensor, got {element_type_of(v)}"
        )
    return v


def _centered(
    imp: Importer, node: onnx.NodeProto, x: int, zp: int, zp_axis: int | None
) -> SSAValue:
    """Input `x` minus its optional zero point `zp`, in int32: a scalar, or a 1-D one along
    `zp_axis` of x (per row of a MatMulInteger's A, per column of B, per output channel of a
    convolution weight)."""
    v = _int32(imp, node.input[x])
    if not imp.has(node, zp):
        return v
    z = _int32(imp, node.input[zp])
    zs, shape = imp.shape_of(z), imp.shape_of(v)
    if zp_axis is None and int(np.prod(zs, dtype=np.int64)) != 1:
        fitted = None
    else:
        fitted = _fit(imp, z, shape, 0 if zp_axis is None else zp_axis)
    if fitted is None:
        raise imp.error(
            f"zero point '{node.input[zp]}' of shape {list(zs)} does not fit input "
            f"'{node.input[x]}' of shape {list(shape)}"
        )
    return imp.op(g.SubOp(v, fitted))


def _requantize(
    imp: Importer,
    node: onnx.NodeProto,
    acc: SSAValue,
    scales: list[int],
    y_scale: int,
    y_zp: int,
    axis: int,
) -> SSAValue:
    """round(acc * prod(scales) / y_scale) + y_zp, saturated to y_zp's type, in int32."""
    qtype = _quantized_type(imp, node, y_zp)
    info = np.iinfo(qtype)
    shape = imp.shape_of(acc)
    y = imp.op(g.CastOp(acc, to="f32"))
    for k in scales:
        s = _fit(imp, imp.value(node.input[k], np.float32), shape, axis)
        if s is None:
            raise imp.error(
                f"scale '{node.input[k]}' must hold one value or one per element of axis {axis} "
                f"of the {list(shape)} result"
            )
        y = imp.op(g.MulOp(y, s))
    y = imp.op(g.DivOp(y, imp.op(g.ReshapeOp(imp.value(node.input[y_scale], np.float32), []))))
    y = imp.op(g.RoundOp(y))
    y = imp.op(g.AddOp(y, imp.op(g.ReshapeOp(imp.value(node.input[y_zp], np.float32), []))))
    y = imp.op(g.ClipOp(y, min=float(info.min), max=float(info.max)))
    return imp.op(g.CastOp(y, to="i32"))


@converter("MatMulInteger")
def convert_matmul_integer(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(A - a_zero_point) @ (B - b_zero_point) in int32; A's zero point may be per row, B's
    per column."""
    a = _centered(imp, node, 0, 2, -2)
    b = _centered(imp, node, 1, 3, -1)
    return [imp.op(g.MatmulOp(a, b))]


@converter("ConvInteger")
def convert_conv_integer(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """conv(x - x_zero_point, w - w_zero_point) in int32 (padding contributes zero, as padding
    with the zero point before subtracting it would); w's zero point may be per channel."""
    x = _centered(imp, node, 0, 2, None)
    w = _centered(imp, node, 1, 3, 0)
    return [conv(imp, node, x, w, None)]


@converter("QLinearMatMul")
def convert_qlinear_matmul(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The int32 product of the centered inputs, requantized to y's scale and zero point."""
    a = _centered(imp, node, 0, 2, -2)
    b = _centered(imp, node, 3, 5, -1)
    acc = imp.op(g.MatmulOp(a, b))
    return [_requantize(imp, node, acc, [1, 4], 6, 7, -1)]


@converter("QLinearConv")
def convert_qlinear_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """conv of the centered inputs plus the int32 bias, requantized (w's scale per channel)."""
    x = _centered(imp, node, 0, 2, None)
    w = _centered(imp, node, 3, 5, 0)
    bias = _int32(imp, node.input[8]) if imp.has(node, 8) else None
    acc = conv(imp, node, x, w, bias)
    return [_requantize(imp, node, acc, [1, 4], 6, 7, 1)]
