"""`fold-batchnorm`: inference batch normalization folded into the producer's weights.

With s = scale / sqrt(var + eps) and t = beta - mean * s (per channel, dim 1):
- conv (constant weight, optional constant bias) whose only use is the batch_norm:
  w' = w * s[:, None, ...], b' = (b - mean) * s + beta = b * s + t;
- gemm / matmul with a constant weight producing a 2-D (N, C) result whose only use is the
  batch_norm (channel = last dim of the product): the weight's output-channel axis is scaled
  (mind trans_b) and the shift becomes the gemm's c (scaled by 1/beta) or a graph.add;
- anything else: x * s + t as a graph.mul and a graph.add with constants of shape (C, 1, ...).
Folded values are computed in float64 and stored as f32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects import graph as g
from passes.transforms.fold_constants import batch_norm_scale_shift, prop

F32 = np.float32


def _const(v: SSAValue | None) -> np.ndarray | None:
    """The value of `v` if a graph.constant produces it."""
    if v is None or not isinstance(v.owner, g.ConstantOp):
        return None
    return g.constant_value(v.owner)


def _params(bn: g.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(s, t) in float64, or None if a parameter is not constant."""
    scale, bias, mean, var = (_const(v) for v in (bn.scale, bn.bias, bn.mean, bn.var))
    if scale is None or bias is None or mean is None or var is None:
        return None
    return batch_norm_scale_shift(scale, bias, mean, var, prop(bn, "epsilon"))


def _rank(v: SSAValue) -> int | None:
    """The rank of a ranked tensor value, else None."""
    return len(v.type.get_shape()) if isinstance(v.type, TensorType) else None


def _hint(op: Operation, old: SSAValue | None, default: str) -> None:
    op.results[0].name_hint = (old.name_hint if old is not None else None) or default


def _bn_params(bn: g.BatchNormOp) -> list[SSAValue | None]:
    return [bn.scale, bn.bias, bn.mean, bn.var]


def _sole_user(producer: Operation, bn: g.BatchNormOp) -> bool:
    uses = list(producer.results[0].uses)
    return len(uses) == 1 and uses[0].operation is bn


def _erase_dead_constants(rewriter: PatternRewriter, values: list[SSAValue | None]) -> None:
    for v in values:
        if (
            v is not None
            and isinstance(v.owner, g.ConstantOp)
            and not v.uses
            and v.owner.parent is not None
        ):  # a constant may be listed twice
            rewriter.erase(v.owner)


class FoldIntoConv(RewritePattern):
    """batch_norm(conv(x, W, b)) -> conv(x, W * s, b * s + t)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = bn.x.owner
        if not isinstance(conv, g.ConvOp) or not _sole_user(conv, bn):
            return
        w, b = _const(conv.w), _const(conv.bias)
        st = _params(bn)
        if w is None or (conv.bias is not None and b is None) or st is None:
            return
        s, t = st
        b64 = np.zeros_like(s) if b is None else b.astype(np.float64)
        per_oc = s.reshape((-1,) + (1,) * (w.ndim - 1))  # any spatial rank
        w2 = g.ConstantOp((w.astype(np.float64) * per_oc).astype(F32))
        b2 = g.ConstantOp((b64 * s + t).astype(F32))
        new = g.ConvOp(conv.x, w2, b2, **dict(conv.properties))
        _hint(w2, conv.w, "w")
        _hint(b2, conv.bias, "b")
        old = [conv.w, conv.bias, *_bn_params(bn)]
        rewriter.replace(bn, [w2, b2, new])
        rewriter.erase(conv)
        _erase_dead_constants(rewriter, old)


class FoldIntoLinear(RewritePattern):
    """batch_norm over a 2-D gemm/matmul result with a constant weight -> scaled weight + shift."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        lin = bn.x.owner
        if not isinstance(lin, g.GemmOp | g.MatmulOp) or not _sole_user(lin, bn):
            return
        w, st = _const(lin.b), _params(bn)
        if w is None or st is None or w.ndim != 2 or _rank(lin.a) != 2:
            return
        gemm = isinstance(lin, g.GemmOp)
        lin_c = lin.c if isinstance(lin, g.GemmOp) else None
        c = _const(lin_c)
        if lin_c is not None and c is None:
            return
        s, t = st
        # the output channel is the last dim of op(B): its rows if trans_b, else its columns
        w2 = g.ConstantOp(
            (
                w.astype(np.float64) * (s[:, None] if gemm and prop(lin, "trans_b") else s[None, :])
            ).astype(F32)
        )
        _hint(w2, lin.b, "w")
        beta = float(F32(prop(lin, "beta"))) if gemm else 0.0
        ops: list[Operation] = [w2]
        if gemm and beta != 0.0:
            # beta * c' = beta * c * s + t
            c2 = t / beta if c is None else c.astype(np.float64) * s + t / beta
            c2op = g.ConstantOp(c2.astype(F32))
            _hint(c2op, lin_c, "c")
            ops += [c2op, g.GemmOp(lin.a, w2, c2op, **dict(lin.properties))]
        else:
            prod = (
                g.GemmOp(lin.a, w2, None, **dict(lin.properties)) if gemm else g.MatmulOp(lin.a, w2)
            )
            shift = g.ConstantOp(t.astype(F32))
            _hint(shift, None, "shift")
            ops += [prod, shift, g.AddOp(prod, shift)]
        old = [lin.b, lin_c, *_bn_params(bn)]
        rewriter.replace(bn, ops)
        rewriter.erase(lin)
        _erase_dead_constants(rewriter, old)


class BatchNormToScaleShift(RewritePattern):
    """batch_norm(x) with constant parameters -> x * s + t (per-channel constants)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        st, rank = _params(bn), _rank(bn.x)
        if st is None or rank is None:
            return
        ch = (-1,) + (1,) * (rank - 2)
        s, t = st
        sc = g.ConstantOp(s.reshape(ch).astype(F32))
        sh = g.ConstantOp(t.reshape(ch).astype(F32))
        mul = g.MulOp(bn.x, sc)
        _hint(sc, None, "bn_scale")
        _hint(sh, None, "bn_shift")
        add = g.AddOp(mul, sh)
        old = _bn_params(bn)
        rewriter.replace(bn, [sc, sh, mul, add])
        _erase_dead_constants(rewriter, old)


@dataclass(frozen=True)
class FoldBatchnormPass(ModulePass):
    name = "fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # producer folds first: the walker tries the patterns in order on each batch_norm
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldIntoConv(), FoldIntoLinear(), BatchNormToScaleShift()])
        ).rewrite_module(op)
