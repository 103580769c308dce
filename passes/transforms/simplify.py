"""`simplify`: algebraic and structural no-ops removed from graph-level IR.

One pattern per rewrite: identity/dropout, cast f32 -> f32, reshape/flatten/squeeze/unsqueeze
to the same type, identity transposes, transpose-of-transpose (perms composed), reshape of a
reshape-like op (one reshape), x*1, 1*x, x+0, 0+x, x-0, x/1 with a constant all-ones/zeros
operand when broadcasting leaves x's shape unchanged, x ** c for c in 1, 2, 3, 4, 0.5 as
products or a sqrt, and pads of all zeros. Ops that a
rewrite leaves without uses are erased.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects import graph as g
from passes.transforms.fold_constants import prop


def _forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace `op` (one result of the same type as `value`) by `value`."""
    rewriter.replace(op, [], [value])


def _erase_if_dead(op: Operation | Block | None, rewriter: PatternRewriter) -> None:
    """Erase `op` (an SSA value's owner: an op, or a block for a block argument) if unused."""
    if isinstance(op, Operation) and all(not r.uses for r in op.results):
        rewriter.erase(op)


class RemoveIdentity(RewritePattern):
    """graph.identity x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.IdentityOp, rewriter: PatternRewriter) -> None:
        _forward(op, op.x, rewriter)


class RemoveDropout(RewritePattern):
    """graph.dropout x (inference) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.DropoutOp, rewriter: PatternRewriter) -> None:
        _forward(op, op.x, rewriter)


class RemoveNoopCast(RewritePattern):
    """graph.cast of an f32 tensor to f32 -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.CastOp, rewriter: PatternRewriter) -> None:
        if op.x.type == op.result.type:
            _forward(op, op.x, rewriter)


class RemoveNoopReshape(RewritePattern):
    """reshape/flatten/squeeze/unsqueeze whose result type is its operand's type -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            isinstance(op, g.ReshapeOp | g.FlattenOp | g.SqueezeOp | g.UnsqueezeOp)
            and op.x.type == op.result.type
        ):
            _forward(op, op.x, rewriter)


class RemoveIdentityTranspose(RewritePattern):
    """graph.transpose with perm [0, 1, ..., n-1] -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.TransposeOp, rewriter: PatternRewriter) -> None:
        if list(prop(op, "perm")) == list(range(len(prop(op, "perm")))):
            _forward(op, op.x, rewriter)


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q[i]]), or x if that is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if not isinstance(inner, g.TransposeOp):
            return
        p, q = prop(inner, "perm"), prop(op, "perm")
        perm = [p[i] for i in q]
        if perm == list(range(len(perm))):
            _forward(op, inner.x, rewriter)
        else:
            rewriter.replace(op, g.TransposeOp(inner.x, perm=perm))
        _erase_if_dead(inner, rewriter)


class ComposeReshapes(RewritePattern):
    """reshape(reshape-like(x)) -> reshape(x) (flatten, squeeze and unsqueeze are reshapes)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if not isinstance(inner, g.ReshapeOp | g.FlattenOp | g.SqueezeOp | g.UnsqueezeOp):
            return
        rewriter.replace(op, g.ReshapeOp(inner.x, op.result.type.get_shape()))
        _erase_if_dead(inner, rewriter)


def _is_splat(v: SSAValue, value: float) -> bool:
    c = v.owner
    return isinstance(c, g.ConstantOp) and bool(np.all(g.constant_value(c) == value))


@dataclass
class RemoveNeutralOperand(RewritePattern):
    """x op c -> x where c is a constant of neutral elements (and, if `commutes`, c op x -> x),
    only when x already has the result's shape (broadcasting must not change it)."""

    op_type: type[g.BinaryOp]
    neutral: float
    commutes: bool

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.op_type):
            return
        sides = [(op.lhs, op.rhs)] + ([(op.rhs, op.lhs)] if self.commutes else [])
        for x, c in sides:
            if x.type == op.result.type and _is_splat(c, self.neutral):
                _forward(op, x, rewriter)
                _erase_if_dead(c.owner, rewriter)
                return


class PowBySmallExponent(RewritePattern):
    """x ** c for a constant c of 1, 2, 3, 4 or 0.5 -> x, products of x, or sqrt(x), when x
    already has the result's shape. A pow the LLVM level cannot see as constant (it arrives in
    memory) is a libm call per lane: GPT-2's GELU (x ** 3) and RMSNorm's x ** 2 cost more
    than the matmul they follow. The products round up to twice where pow rounds once."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.PowOp, rewriter: PatternRewriter) -> None:
        x, c = op.lhs, op.rhs
        if x.type != op.result.type:
            return
        exponent = next((e for e in (1.0, 2.0, 3.0, 4.0, 0.5) if _is_splat(c, e)), None)
        if exponent is None:
            return
        new: list[Operation] = []
        if exponent == 0.5:
            new = [g.SqrtOp(x)]
        elif exponent >= 2.0:
            square = g.MulOp(x, x)
            new = [square]
            if exponent == 3.0:
                new.append(g.MulOp(square, x))
            elif exponent == 4.0:
                new.append(g.MulOp(square, square))
        if new:
            rewriter.replace(op, new)
        else:
            _forward(op, x, rewriter)
        _erase_if_dead(c.owner, rewriter)


class RemoveZeroPad(RewritePattern):
    """graph.pad with all pads 0 -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.PadOp, rewriter: PatternRewriter) -> None:
        if not any(prop(op, "pads")):
            _forward(op, op.x, rewriter)


def simplify_patterns() -> list[RewritePattern]:
    return [
        RemoveIdentity(),
        RemoveDropout(),
        RemoveNoopCast(),
        RemoveNoopReshape(),
        RemoveIdentityTranspose(),
        ComposeTransposes(),
        ComposeReshapes(),
        RemoveNeutralOperand(g.MulOp, 1.0, True),
        RemoveNeutralOperand(g.AddOp, 0.0, True),
        RemoveNeutralOperand(g.SubOp, 0.0, False),
        RemoveNeutralOperand(g.DivOp, 1.0, False),
        PowBySmallExponent(),
        RemoveZeroPad(),
    ]


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    name = "simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(simplify_patterns())).rewrite_module(op)
