"""`fold-constants{max_elements=N}`: evaluate graph ops on constants at compile time.

Every graph op whose operands all come from `graph.constant` (and `graph.shape`, whose result
is known from the static type alone) is evaluated with numpy and replaced by a
`graph.constant`; the rewrite repeats until nothing folds, then unused constants are erased.
A result with more than `max_elements` elements is never materialized (the op stays).

The numpy semantics live once, in `NUMPY_SEMANTICS` (op class -> f(arrays, op) -> results):
elementwise (add sub mul div pow floor ceil round sin cos sqrt exp log neg abs reciprocal relu sigmoid tanh erf
hard_swish leaky_relu hard_sigmoid clip gelu cast identity dropout max min, the comparisons,
and or xor not where expand), matmul, gemm, softmax,
log_softmax, layer_norm, batch_norm, global_avg_pool, global_max_pool, reduce_mean/sum/max,
reshape, flatten, squeeze, unsqueeze, transpose, concat, split, slice, gather, pad and shape.
Not folded (no numpy implementation here, on purpose): conv, max_pool, avg_pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects import graph as g
from dialects.dense import numpy_dtype
from dialects.graph import attribute_value
from dialects.sched import MAX_EXTENT
from passes.schedule.options import check_option

F32 = np.float32


def prop(op: Operation, name: str) -> Any:
    """A property of a graph op as a plain Python value (its declared default when absent, None
    if it has none)."""
    a = op.properties.get(name)
    if a is None:
        assert isinstance(op, IRDLOperation), f"{op.name} has no declared properties"
        a = type(op).get_irdl_definition().properties[name].default_value
    return None if a is None else attribute_value(a)


def _result_dtype(op: Operation) -> np.dtype:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return numpy_dtype(t.get_element_type())


def result_shape(op: Operation, i: int = 0) -> tuple[int, ...]:
    t = op.results[i].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(F32)


def _gelu(x: np.ndarray, op: Operation) -> np.ndarray:
    d = x.astype(np.float64)
    if prop(op, "approximate") == "tanh":
        y = 0.5 * d * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (d + 0.044715 * d**3)))
    else:
        y = 0.5 * d * (1.0 + _erf(d / math.sqrt(2.0)))
    return y.astype(F32)


def _gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, op: Operation) -> np.ndarray:
    a = a.T if prop(op, "trans_a") else a
    b = b.T if prop(op, "trans_b") else b
    y = F32(prop(op, "alpha")) * (a @ b)
    if c is not None:
        y = y + F32(prop(op, "beta")) * c
    return y.astype(F32)


def _softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    d = x.astype(np.float64)
    z = d - d.max(axis=axis, keepdims=True)
    s = np.exp(z).sum(axis=axis, keepdims=True)
    return (z - np.log(s) if log else np.exp(z) / s).astype(F32)


def _layer_norm(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, op: Operation
) -> np.ndarray:
    axes = tuple(range(prop(op, "axis"), x.ndim))
    d = x.astype(np.float64)
    mean = d.mean(axis=axes, keepdims=True)
    var = ((d - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (d - mean) / np.sqrt(var + prop(op, "epsilon")) * scale
    return (y if bias is None else y + bias).astype(F32)


def batch_norm_scale_shift(
    scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """Inference batch norm as y = x * s + t per channel (computed in float64)."""
    s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + float(np.float32(eps)))
    t = bias.astype(np.float64) - mean.astype(np.float64) * s
    return s, t


def _batch_norm(a: Sequence[np.ndarray], op: Operation) -> np.ndarray:
    x = a[0]
    s, t = batch_norm_scale_shift(a[1], a[2], a[3], a[4], prop(op, "epsilon"))
    ch = (-1,) + (1,) * (x.ndim - 2)
    return (x.astype(np.float64) * s.reshape(ch) + t.reshape(ch)).astype(F32)


def _reduce(
    fn: Callable[..., np.ndarray],
) -> Callable[[Sequence[np.ndarray], Operation], np.ndarray]:
    def run(a: Sequence[np.ndarray], op: Operation) -> np.ndarray:
        axes = prop(op, "axes")
        return fn(a[0], axis=tuple(axes) if axes else None, keepdims=bool(prop(op, "keepdims")))

    return run


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integers truncated toward zero (as the compiled code and onnxruntime do)."""
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(a.astype(np.float64) / b).astype(a.dtype)
    return a / b


def _slice(x: np.ndarray, op: Operation) -> np.ndarray:
    idx = tuple(
        slice(s, None if e < 0 else e, st)
        for s, e, st in zip(prop(op, "starts"), prop(op, "ends"), prop(op, "steps"), strict=True)
    )
    return x[idx]


def _pad(x: np.ndarray, op: Operation) -> np.ndarray:
    pads, n = prop(op, "pads"), x.ndim
    crop = tuple(slice(max(-pads[i], 0), x.shape[i] - max(-pads[i + n], 0)) for i in range(n))
    widths = [(max(pads[i], 0), max(pads[i + n], 0)) for i in range(n)]
    return np.pad(x[crop], widths, constant_values=F32(prop(op, "value")))


def _split(x: np.ndarray, op: Operation) -> list[np.ndarray]:
    cuts = np.cumsum(prop(op, "sizes"))[:-1]
    return np.split(x, cuts, axis=prop(op, "axis"))


Semantics = Callable[[Sequence[np.ndarray], Operation], np.ndarray | list[np.ndarray]]

NUMPY_SEMANTICS: dict[type[Operation], Semantics] = {
    g.AddOp: lambda a, op: a[0] + a[1],
    g.SubOp: lambda a, op: a[0] - a[1],
    g.MulOp: lambda a, op: a[0] * a[1],
    g.DivOp: lambda a, op: _divide(a[0], a[1]),
    g.PowOp: lambda a, op: np.power(a[0], a[1]),
    g.SqrtOp: lambda a, op: np.sqrt(a[0]),
    g.FloorOp: lambda a, op: np.floor(a[0]),
    g.CeilOp: lambda a, op: np.ceil(a[0]),
    g.RoundOp: lambda a, op: np.round(a[0]),
    g.SinOp: lambda a, op: np.sin(a[0]),
    g.CosOp: lambda a, op: np.cos(a[0]),
    g.ExpOp: lambda a, op: np.exp(a[0]),
    g.LogOp: lambda a, op: np.log(a[0]),
    g.NegOp: lambda a, op: -a[0],
    g.AbsOp: lambda a, op: np.abs(a[0]),
    g.ReciprocalOp: lambda a, op: F32(1) / a[0],
    g.ReluOp: lambda a, op: np.maximum(a[0], F32(0)),
    g.SigmoidOp: lambda a, op: _sigmoid(a[0]),
    g.TanhOp: lambda a, op: np.tanh(a[0]),
    g.ErfOp: lambda a, op: _erf(a[0]).astype(F32),
    g.HardSwishOp: lambda a, op: a[0] * np.clip(a[0] / F32(6) + F32(0.5), 0, 1),
    g.LeakyReluOp: lambda a, op: np.where(a[0] >= 0, a[0], F32(prop(op, "alpha")) * a[0]),
    g.HardSigmoidOp: lambda a, op: np.clip(
        F32(prop(op, "alpha")) * a[0] + F32(prop(op, "beta")), 0, 1
    ),
    g.ClipOp: lambda a, op: np.minimum(
        np.maximum(a[0], F32(prop(op, "min"))), F32(prop(op, "max"))
    ),
    g.GeluOp: lambda a, op: _gelu(a[0], op),
    g.CastOp: lambda a, op: a[0],  # `evaluate` converts to the result type
    g.MaxOp: lambda a, op: np.maximum(a[0], a[1]),
    g.MinOp: lambda a, op: np.minimum(a[0], a[1]),
    g.EqualOp: lambda a, op: a[0] == a[1],
    g.LessOp: lambda a, op: a[0] < a[1],
    g.LessEqualOp: lambda a, op: a[0] <= a[1],
    g.GreaterOp: lambda a, op: a[0] > a[1],
    g.GreaterEqualOp: lambda a, op: a[0] >= a[1],
    g.AndOp: lambda a, op: a[0] & a[1],
    g.OrOp: lambda a, op: a[0] | a[1],
    g.XorOp: lambda a, op: a[0] ^ a[1],
    g.NotOp: lambda a, op: ~a[0],
    g.ShiftLeftOp: lambda a, op: np.left_shift(a[0], a[1]),
    g.ShiftRightOp: lambda a, op: np.right_shift(a[0], a[1]),
    g.BitcastOp: lambda a, op: a[0].view(_result_dtype(op)),
    g.WhereOp: lambda a, op: np.where(a[0], a[1], a[2]),
    g.ExpandOp: lambda a, op: np.broadcast_to(a[0], result_shape(op)),
    g.IdentityOp: lambda a, op: a[0],
    g.DropoutOp: lambda a, op: a[0],
    g.MatmulOp: lambda a, op: np.matmul(a[0], a[1]),
    g.GemmOp: lambda a, op: _gemm(a[0], a[1], a[2] if len(a) > 2 else None, op),
    g.SoftmaxOp: lambda a, op: _softmax(a[0], prop(op, "axis"), log=False),
    g.LogSoftmaxOp: lambda a, op: _softmax(a[0], prop(op, "axis"), log=True),
    g.LayerNormOp: lambda a, op: _layer_norm(a[0], a[1], a[2] if len(a) > 2 else None, op),
    g.BatchNormOp: _batch_norm,
    g.GlobalAvgPoolOp: lambda a, op: a[0].mean(axis=tuple(range(2, a[0].ndim)), keepdims=True),
    g.GlobalMaxPoolOp: lambda a, op: a[0].max(axis=tuple(range(2, a[0].ndim)), keepdims=True),
    g.ReduceMeanOp: _reduce(np.mean),
    g.ReduceSumOp: _reduce(np.sum),
    g.ReduceMaxOp: _reduce(np.max),
    g.ReshapeOp: lambda a, op: a[0].reshape(result_shape(op)),
    g.FlattenOp: lambda a, op: a[0].reshape(result_shape(op)),
    g.SqueezeOp: lambda a, op: a[0].reshape(result_shape(op)),
    g.UnsqueezeOp: lambda a, op: a[0].reshape(result_shape(op)),
    g.TransposeOp: lambda a, op: np.transpose(a[0], prop(op, "perm")),
    g.ConcatOp: lambda a, op: np.concatenate(list(a), axis=prop(op, "axis")),
    g.SplitOp: lambda a, op: _split(a[0], op),
    g.SliceOp: lambda a, op: _slice(a[0], op),
    g.GatherOp: lambda a, op: np.take(a[0], a[1].astype(np.int64), axis=prop(op, "axis")),
    g.PadOp: lambda a, op: _pad(a[0], op),
}


def evaluate(op: Operation, arrays: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """The results of `op` on `arrays` with numpy (cast to the result types), or None if the
    op has no numpy semantics."""
    fn = NUMPY_SEMANTICS.get(type(op))
    if fn is None:
        return None
    with np.errstate(all="ignore"):
        out = fn(arrays, op)
    outs = out if isinstance(out, list) else [out]
    res = []
    for r, v in zip(op.results, outs, strict=True):
        t = r.type
        assert isinstance(t, TensorType), (op.name, t)
        v = np.asarray(v).astype(numpy_dtype(t.get_element_type()))
        assert v.shape == tuple(t.get_shape()), (op.name, v.shape)
        res.append(v)
    return res


@dataclass
class FoldConstantOp(RewritePattern):
    """An op with numpy semantics whose operands are all graph.constant -> graph.constant(s)."""

    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, g.ShapeOp):  # static shapes: known whatever the operand is
            shape = _operand_shape(op)
            if DYNAMIC_INDEX not in shape:  # a run-time dim is read when the model runs
                rewriter.replace(op, g.ConstantOp(np.asarray(shape, dtype=np.int64)))
            return
        if type(op) not in NUMPY_SEMANTICS or not op.results:
            return
        producers = [v.owner for v in op.operands]
        constants = [p for p in producers if isinstance(p, g.ConstantOp)]
        if len(constants) != len(producers):
            return
        if any(math.prod(result_shape(op, i)) > self.max_elements for i in range(len(op.results))):
            return
        arrays = [g.constant_value(p) for p in constants]
        outs = evaluate(op, arrays)
        if outs is None:
            return
        new = [g.ConstantOp(v) for v in outs]
        for r, n in zip(op.results, new, strict=True):
            if r.name_hint:
                n.results[0].name_hint = r.name_hint
        rewriter.replace(op, new, [n.results[0] for n in new])


def _operand_shape(op: Operation) -> tuple[int, ...]:
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


class EraseDeadConstant(RewritePattern):
    """A graph.constant without uses goes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConstantOp, rewriter: PatternRewriter) -> None:
        if not op.results[0].uses:
            rewriter.erase(op)


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    name = "fold-constants"

    max_elements: int = 1 << 22

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_option(
            self.name, "max-elements", self.max_elements, 0, MAX_EXTENT, " (elements per tensor)"
        )
        PatternRewriteWalker(FoldConstantOp(self.max_elements)).rewrite_module(op)
        PatternRewriteWalker(EraseDeadConstant(), walk_reverse=True).rewrite_module(op)
