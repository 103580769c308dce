"""Converters of Softmax and the normalizations (batch, layer, instance, group, RMS, Lp,
mean-variance, LRN)."""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    results,
)
from dialects import graph as g
from dialects import graph_shapes as S


@converter("LRN")
def convert_lrn(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Local response normalization across channels, y = x / (bias + alpha/size * sum of x^2
    over `size` neighbouring channels)^beta, from graph ops: the windowed channel sum is an
    average pool (padding counted) over [N, 1, C, H*W]."""
    a = attrs(node)
    size = int(a["size"])
    alpha, beta, bias = (
        float(a.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0))
    )
    x = imp.value(node.input[0])
    shape = list(imp.shape_of(x))
    if len(shape) < 3:
        raise imp.error(f"LRN needs an input of rank 3 or more (got rank {len(shape)})")
    if size < 1:
        raise imp.error(f"LRN size must be positive (got {size})")
    n, c, rest = shape[0], shape[1], int(np.prod(shape[2:]))

    squared = imp.emit(g.MulOp(x, x)).results[0]
    planes = imp.emit(g.ReshapeOp(squared, [n, 1, c, rest])).results[0]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = imp.emit(
        g.AvgPoolOp(
            planes,
            kernel=[size, 1],
            strides=[1, 1],
            pads=[lo, 0, hi, 0],
            ceil_mode=0,
            count_include_pad=1,
        )
    ).results[0]
    mean_sq = imp.emit(g.ReshapeOp(window, shape)).results[0]
    scaled = imp.emit(g.MulOp(mean_sq, imp.scalar(alpha))).results[0]
    base = imp.emit(g.AddOp(scaled, imp.scalar(bias))).results[0]
    denominator = imp.emit(g.PowOp(base, imp.scalar(beta))).results[0]
    return results(imp.emit(g.DivOp(x, denominator)))


@converter("Softmax", "LogSoftmax")
def convert_softmax(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    op_cls = g.SoftmaxOp if node.op_type == "Softmax" else g.LogSoftmaxOp
    x = imp.value(node.input[0])
    shape = imp.shape(node.input[0])
    rank = len(shape)
    legacy = imp.opset < 13
    axis = S.normalize_axis(attrs(node).get("axis", 1 if legacy else -1), rank)
    if not legacy or axis == rank - 1:
        return results(imp.emit(op_cls(x, axis=axis)))
    # opset < 13: softmax over the 2-D coercion [prod(shape[:axis]), prod(shape[axis:])]
    flat = imp.emit(g.ReshapeOp(x, [math.prod(shape[:axis]), math.prod(shape[axis:])]))
    sm = imp.emit(op_cls(flat, axis=1))
    return results(imp.emit(g.ReshapeOp(sm, shape)))


@converter("LayerNormalization")
def convert_layer_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    rank = len(imp.shape(node.input[0]))
    axis = S.normalize_axis(a.get("axis", -1), rank)
    eps = a.get("epsilon", 1e-5)
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    x = imp.value(node.input[0])
    outs = results(
        imp.emit(g.LayerNormOp(x, imp.value(node.input[1]), bias, axis=axis, epsilon=eps))
    )
    if any(node.output[1:3]):
        # the optional Mean and InvStdDev outputs (reduced dims kept as 1), from graph ops
        axes = list(range(axis, rank))
        mean = imp.emit(g.ReduceMeanOp(x, axes=axes, keepdims=1))
        d = imp.emit(g.SubOp(x, mean))
        var = imp.emit(g.ReduceMeanOp(imp.emit(g.MulOp(d, d)), axes=axes, keepdims=1))
        inv = imp.emit(g.ReciprocalOp(imp.emit(g.SqrtOp(imp.emit(g.AddOp(var, imp.scalar(eps)))))))
        outs += [mean.results[0], inv.results[0]]
    return outs


@converter("BatchNormalization")
def convert_batch_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    if a.get("training_mode", 0):
        raise imp.error("training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = (imp.value(n) for n in node.input[:5])
    return results(
        imp.emit(g.BatchNormOp(x, scale, bias, mean, var, epsilon=a.get("epsilon", 1e-5)))
    )


@converter("InstanceNormalization")
def convert_instance_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(x - mean) / sqrt(var + eps) over the spatial dims of each (n, c), then per-channel
    scale and bias."""
    x, scale, bias = (imp.value(n) for n in node.input[:3])
    shape = imp.shape_of(x)
    if len(shape) < 3:
        raise imp.error(f"needs an input of rank 3 or more (N, C, spatial...), got {list(shape)}")
    axes = list(range(2, len(shape)))
    eps = float(attrs(node).get("epsilon", 1e-5))
    mean = imp.op(g.ReduceMeanOp(x, axes=axes, keepdims=1))
    d = imp.op(g.SubOp(x, mean))
    var = imp.op(g.ReduceMeanOp(imp.op(g.MulOp(d, d)), axes=axes, keepdims=1))
    y = imp.op(g.DivOp(d, imp.op(g.SqrtOp(imp.op(g.AddOp(var, imp.scalar(eps)))))))
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    y = imp.op(g.MulOp(y, imp.op(g.ReshapeOp(scale, per_channel))))
    return results(imp.emit(g.AddOp(y, imp.op(g.ReshapeOp(bias, per_channel)))))


def _stash_type(imp: Importer, node: onnx.NodeProto) -> None:
    """stash_type names the precision of the statistics; only float32 (1, the default) is
    computed here (tensors are float32 at run time)."""
    st = int(attrs(node).get("stash_type", 1))
    if st != 1:
        raise imp.error(f"stash_type {st} is not supported (only 1, float32)")


def _normalize(imp: Importer, x: SSAValue, axes: list[int], eps: float) -> SSAValue:
    """(x - mean) / sqrt(var + eps) over `axes` (variance from the centred values)."""
    mean = imp.op(g.ReduceMeanOp(x, axes=axes, keepdims=1))
    d = imp.op(g.SubOp(x, mean))
    var = imp.op(g.ReduceMeanOp(imp.op(g.MulOp(d, d)), axes=axes, keepdims=1))
    return imp.op(g.DivOp(d, imp.op(g.SqrtOp(imp.op(g.AddOp(var, imp.scalar(eps)))))))


def _float_input(imp: Importer, x: SSAValue) -> None:
    if element_type_of(x) != f32:
        raise imp.error(f"needs a float input, got element type {element_type_of(x)}")


@converter("GroupNormalization")
def convert_group_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Normalization over each group of channels (and the spatial dims) of each instance, then
    scale and bias: per group (opset 18 to 20) or per channel (opset 21 on)."""
    a = attrs(node)
    _stash_type(imp, node)
    x, scale, bias = (imp.value(n) for n in node.input[:3])
    _float_input(imp, x)
    shape = imp.shape_of(x)
    if len(shape) < 2:
        raise imp.error(f"needs an input of rank 2 or more (N, C, ...), got {list(shape)}")
    groups = int(a["num_groups"])
    n, c = shape[0], shape[1]
    if groups < 1 or c % groups:
        raise imp.error(f"num_groups {groups} must be positive and divide the {c} channels")
    per_channel = imp.opset >= 21
    want = c if per_channel else groups
    for name, v in (("scale", scale), ("bias", bias)):
        if imp.shape_of(v) != (want,):
            unit = "channel" if per_channel else "group"
            raise imp.error(
                f"{name} must have shape [{want}] (one per {unit} at opset {imp.opset}), got "
                f"{list(imp.shape_of(v))}"
            )
    grouped = imp.op(g.ReshapeOp(x, [n, groups, math.prod(shape[1:]) // groups]))
    y = _normalize(imp, grouped, [2], float(a.get("epsilon", 1e-5)))
    if not per_channel:
        y = imp.op(g.MulOp(y, imp.op(g.ReshapeOp(scale, [groups, 1]))))
        y = imp.op(g.AddOp(y, imp.op(g.ReshapeOp(bias, [groups, 1]))))
        return [imp.op(g.ReshapeOp(y, shape))]
    y = imp.op(g.ReshapeOp(y, shape))
    channels = [c] + [1] * (len(shape) - 2)
    y = imp.op(g.MulOp(y, imp.op(g.ReshapeOp(scale, channels))))
    return [imp.op(g.AddOp(y, imp.op(g.ReshapeOp(bias, channels))))]


@converter("RMSNormalization")
def convert_rms_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x / sqrt(mean(x^2) + epsilon) * scale, the mean over the dims from `axis` on."""
    a = attrs(node)
    _stash_type(imp, node)
    x, scale = imp.value(node.input[0]), imp.value(node.input[1])
    _float_input(imp, x)
    rank = len(imp.shape_of(x))
    axis = S.normalize_axis(int(a.get("axis", -1)), rank)
    axes = list(range(axis, rank))
    ms = imp.op(g.ReduceMeanOp(imp.op(g.MulOp(x, x)), axes=axes, keepdims=1))
    rms = imp.op(g.SqrtOp(imp.op(g.AddOp(ms, imp.scalar(float(a.get("epsilon", 1e-5)))))))
    return [imp.op(g.MulOp(imp.op(g.DivOp(x, rms)), scale))]


@converter("LpNormalization")
def convert_lp_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x / ||x||_p along one axis (p = 1 or 2); 0 where the norm is 0."""
    a = attrs(node)
    x = imp.value(node.input[0])
    _float_input(imp, x)
    axis = S.normalize_axis(int(a.get("axis", -1)), len(imp.shape_of(x)))
    p = int(a.get("p", 2))
    if p not in (1, 2):
        raise imp.error(f"p must be 1 or 2, got {p}")
    if p == 1:
        norm = imp.op(g.ReduceSumOp(imp.op(g.AbsOp(x)), axes=[axis], keepdims=1))
    else:
        norm = imp.op(
            g.SqrtOp(imp.op(g.ReduceSumOp(imp.op(g.MulOp(x, x)), axes=[axis], keepdims=1)))
        )
    zero = imp.scalar(0.0)
    y = imp.op(g.DivOp(x, norm))
    return [imp.op(g.WhereOp(imp.op(g.EqualOp(norm, zero)), zero, y))]


@converter("MeanVarianceNormalization")
def convert_mvn(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(x - mean) / (std + 1e-9) over `axes` (default 0, 2, 3), as the operator's function."""
    x = imp.value(node.input[0])
    _float_input(imp, x)
    axes = list(S.normalize_axes(list(attrs(node).get("axes", [0, 2, 3])), len(imp.shape_of(x))))
    mean = imp.op(g.ReduceMeanOp(x, axes=axes, keepdims=1))
    d = imp.op(g.SubOp(x, mean))
    var = imp.op(g.ReduceMeanOp(imp.op(g.MulOp(d, d)), axes=axes, keepdims=1))
    std = imp.op(g.AddOp(imp.op(g.SqrtOp(var)), imp.scalar(1e-9)))
    return [imp.op(g.DivOp(d, std))]
