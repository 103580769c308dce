"""Converters of convolution and pooling (they share the window and auto_pad logic)."""

from __future__ import annotations

from collections.abc import Sequence

import onnx
from xdsl.ir import Operation

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    results,
    text,
)
from dialects import graph as g
from dialects import graph_shapes as S


def _auto_pad(
    mode: str,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> list[int]:
    """Explicit (begins..., ends...) pads for an ONNX auto_pad mode."""
    if mode in ("NOTSET", ""):
        return list(pads) if pads else [0] * (2 * len(spatial))
    if mode == "VALID":
        return [0] * (2 * len(spatial))
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise S.ShapeError(
            f"unknown auto_pad {mode!r} (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)"
        )
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def _window(
    imp: Importer, node: onnx.NodeProto, kernel: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    a = attrs(node)
    x = imp.shape(node.input[0])
    if len(x) != 4:
        raise imp.error(f"only 2-D (NCHW) inputs are supported, got rank {len(x)}")
    strides = list(a.get("strides", [1, 1]))
    dilations = list(a.get("dilations", [1, 1]))
    for what, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != 2 or min(values) < 1:
            raise imp.error(f"{what} must be two positive numbers, got {list(values)}")
    pads = _auto_pad(
        text(a.get("auto_pad", "NOTSET")), x[2:], kernel, strides, dilations, a.get("pads", [])
    )
    return strides, pads, dilations


@converter("Conv")
def convert_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    w_shape = imp.shape(node.input[1])
    if len(w_shape) != 4:
        raise imp.error(f"weight must be 4-D (M, C/group, kH, kW), got shape {list(w_shape)}")
    kernel = list(a.get("kernel_shape", w_shape[2:]))
    if kernel != list(w_shape[2:]):
        raise imp.error(
            f"kernel_shape {kernel} does not match the weight's spatial shape {list(w_shape[2:])}"
        )
    strides, pads, dilations = _window(imp, node, kernel)
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    return results(
        imp.emit(
            g.ConvOp(
                imp.value(node.input[0]),
                imp.value(node.input[1]),
                bias,
                strides=strides,
                pads=pads,
                dilations=dilations,
                group=a.get("group", 1),
            )
        )
    )


@converter("MaxPool", "AveragePool")
def convert_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    kernel = list(a["kernel_shape"])
    strides, pads, dilations = _window(imp, node, kernel)
    x = imp.value(node.input[0])
    ceil_mode = a.get("ceil_mode", 0)
    if node.op_type == "MaxPool":
        if len(node.output) > 1 and node.output[1]:
            raise imp.error("the Indices output is not supported")
        op: Operation = g.MaxPoolOp(
            x, kernel=kernel, strides=strides, pads=pads, dilations=dilations, ceil_mode=ceil_mode
        )
    else:
        if dilations != [1, 1]:
            raise imp.error("dilated AveragePool is not supported")
        op = g.AvgPoolOp(
            x,
            kernel=kernel,
            strides=strides,
            pads=pads,
            ceil_mode=ceil_mode,
            count_include_pad=a.get("count_include_pad", 0),
        )
    return results(imp.emit(op))


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls = g.GlobalAvgPoolOp if node.op_type == "GlobalAveragePool" else g.GlobalMaxPoolOp
    return results(imp.emit(cls(imp.value(node.input[0]))))
