"""Converters of the Reduce* operators: native ones and those composed of them."""

from __future__ import annotations

import onnx
from xdsl.dialects.builtin import (
    i1,
)
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

_REDUCE: dict[str, tuple[type[g.GraphOp], int]] = {
    # op -> (graph op, first opset where axes is an input)
    "ReduceMean": (g.ReduceMeanOp, 18),
    "ReduceSum": (g.ReduceSumOp, 13),
    "ReduceMax": (g.ReduceMaxOp, 18),
    "ReduceProd": (g.ReduceProdOp, 18),
}


@converter(*_REDUCE)
def convert_reduce(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls, axes_input_since = _REDUCE[node.op_type]
    a = attrs(node)
    rank = len(imp.shape(node.input[0]))
    if imp.opset >= axes_input_since:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else []
    else:
        axes = list(a.get("axes", []))
    x = imp.value(node.input[0])
    if not axes and a.get("noop_with_empty_axes", 0):
        return results(imp.emit(g.IdentityOp(x)))
    return results(
        imp.emit(
            cls(
                x,
                axes=S.normalize_axes([int(v) for v in axes], rank),
                keepdims=a.get("keepdims", 1),
            )
        )
    )


def _keep_or_squeeze(imp: Importer, y: SSAValue, axes: list[int], keepdims: int) -> SSAValue:
    return y if keepdims else imp.op(g.SqueezeOp(y, axes=axes))


def _reduce_axes(imp: Importer, node: onnx.NodeProto, axes_input_since: int) -> list[int]:
    rank = len(imp.shape(node.input[0]))
    a = attrs(node)
    if imp.opset >= axes_input_since:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else []
    else:
        axes = list(a.get("axes", []))
    return list(S.normalize_axes([int(v) for v in axes], rank)) if axes else list(range(rank))


@converter(
    "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"
)
def convert_reduce_composed(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Reductions composed of ReduceSum/ReduceMax and elementwise ops: min(x) = -max(-x),
    L1 = sum|x|, L2 = sqrt(sum x^2), log-sum-exp = m + log(sum(exp(x - m)))."""
    a = attrs(node)
    since = 18
    keepdims = int(a.get("keepdims", 1))
    x = imp.value(node.input[0])
    if imp.has(node, 1) or "axes" in a or imp.opset < since:
        axes = _reduce_axes(imp, node, since)
    else:
        if a.get("noop_with_empty_axes", 0):
            return results(imp.emit(g.IdentityOp(x)))
        axes = list(range(len(imp.shape_of(x))))
    t = node.op_type
    if t == "ReduceMin":  # bool: not any(not x)
        flip = g.NotOp if element_type_of(x) == i1 else g.NegOp
        m = imp.op(g.ReduceMaxOp(imp.op(flip(x)), axes=axes, keepdims=keepdims))
        return [imp.op(flip(m))]
    if t == "ReduceL1":
        return [imp.op(g.ReduceSumOp(imp.op(g.AbsOp(x)), axes=axes, keepdims=keepdims))]
    if t in ("ReduceL2", "ReduceSumSquare"):
        s = imp.op(g.ReduceSumOp(imp.op(g.MulOp(x, x)), axes=axes, keepdims=keepdims))
        return [imp.op(g.SqrtOp(s)) if t == "ReduceL2" else s]
    if t == "ReduceLogSum":
        return [imp.op(g.LogOp(imp.op(g.ReduceSumOp(x, axes=axes, keepdims=keepdims))))]
    m = imp.op(g.ReduceMaxOp(x, axes=axes, keepdims=1))
    e = imp.op(g.ExpOp(imp.op(g.SubOp(x, m))))
    y = imp.op(g.AddOp(imp.op(g.LogOp(imp.op(g.ReduceSumOp(e, axes=axes, keepdims=1)))), m))
    return [_keep_or_squeeze(imp, y, axes, keepdims)]
