"""Converters of the loss operators NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
composed of graph ops: the run-time integer targets select their class through a one-hot mask
(target == a static iota over the class axis), which Where and ReduceSum turn into the picked
log-probabilities and weights."""

from __future__ import annotations

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
    text,
)
from dialects import graph as g
from dialects.dense import numpy_dtype

_REDUCTIONS = ("none", "sum", "mean")


def _nll(imp: Importer, node: onnx.NodeProto, log_prob: SSAValue, what: str) -> SSAValue:
    """loss[n, d...] = -log_prob[n, target[n, d...], d...] * weight[target], 0 where target is
    ignore_index, then reduced: none, sum, or mean = sum / the sum of the applied weights."""
    a = attrs(node)
    reduction = text(a.get("reduction", "mean"))
    if reduction not in _REDUCTIONS:
        raise imp.error(f"reduction must be one of {', '.join(_REDUCTIONS)}, got '{reduction}'")
    shape = imp.shape_of(log_prob)
    if len(shape) < 2:
        raise imp.error(f"{what} must be [N, C] or [N, C, d1, ...], got shape {list(shape)}")
    if element_type_of(log_prob) != f32:
        raise imp.error(f"{what} must be float32, got {element_type_of(log_prob)}")
    classes = shape[1]
    target = imp.value(node.input[1])
    expected = (shape[0], *shape[2:])
    if imp.shape_of(target) != expected:
        raise imp.error(
            f"target must have shape {list(expected)} (the {what} shape without the class "
            f"axis), got {list(imp.shape_of(target))}"
        )
    tdtype = numpy_dtype(element_type_of(target))
    if not np.issubdtype(tdtype, np.integer):
        raise imp.error(f"target must be int32 or int64, got {element_type_of(target)}")

    # one-hot over the class axis: target[n, None, d...] == c
    per_class = [1, classes] + [1] * (len(shape) - 2)
    iota = imp.op(g.ConstantOp(np.arange(classes, dtype=tdtype).reshape(per_class)))
    target_c = imp.op(g.UnsqueezeOp(target, axes=[1]))
    onehot = imp.op(g.EqualOp(target_c, iota))
    valid: SSAValue | None = None
    if "ignore_index" in a:
        ignore = imp.scalar(int(a["ignore_index"]), like=target)
        valid = imp.op(g.NotOp(imp.op(g.EqualOp(target, ignore))))
        onehot = imp.op(g.AndOp(onehot, imp.op(g.UnsqueezeOp(valid, axes=[1]))))

    zero = imp.scalar(0.0)
    weight: SSAValue | None = None
    picked_input = log_prob
    if imp.has(node, 2):
        weight = imp.value(node.input[2])
        if imp.shape_of(weight) != (classes,) or element_type_of(weight) != f32:
            raise imp.error(
                f"weight must be a float32 tensor of shape [{classes}] (one per class), got "
                f"{element_type_of(weight)} of shape {list(imp.shape_of(weight))}"
            )
        weight = imp.op(g.ReshapeOp(weight, per_class))
        picked_input = imp.op(g.MulOp(log_prob, weight))
    picked = imp.op(
        g.ReduceSumOp(imp.op(g.WhereOp(onehot, picked_input, zero)), axes=[1], keepdims=0)
    )
    loss = imp.op(g.NegOp(picked))
    if reduction == "none":
        return loss
    total = imp.op(g.ReduceSumOp(loss, axes=[], keepdims=0))
    if reduction == "sum":
        return total
    if weight is not None:
        applied = imp.op(g.WhereOp(onehot, weight, zero))
    elif valid is not None:
        applied = imp.op(g.CastOp(valid, to="f32"))
    else:
        return imp.op(g.DivOp(total, imp.scalar(float(np.prod(expected)))))
    return imp.op(g.DivOp(total, imp.op(g.ReduceSumOp(applied, axes=[], keepdims=0))))


@converter("NegativeLogLikelihoodLoss")
def convert_nll_loss(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return [_nll(imp, node, imp.value(node.input[0]), "input")]


@converter("SoftmaxCrossEntropyLoss")
def convert_softmax_cross_entropy_loss(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The negative log-likelihood of log_softmax(scores) over the class axis (axis 1); the
    optional second output is that log-probability tensor."""
    scores = imp.value(node.input[0])
    if len(imp.shape_of(scores)) < 2:
        raise imp.error(
            f"scores must be [N, C] or [N, C, d1, ...], got {list(imp.shape_of(scores))}"
        )
    log_prob = imp.op(g.LogSoftmaxOp(scores, axis=1))
    outs: list[Value] = [_nll(imp, node, log_prob, "scores"), log_prob]
    return outs[: len(node.output)]
