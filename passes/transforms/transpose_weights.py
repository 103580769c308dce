"""`transpose-weights`: a Gemm's constant B given transposed (trans_b = 1, how exporters write
PyTorch's Linear) is stored the other way round at compile time, and trans_b becomes 0.

The kernel then reads B[k, j] along j, the output dim that the default schedule vectorizes
(with A broadcast), contiguously. Read as B[j, k], that loop walks B with a stride of K: a
gather per vector, or scalar code, and a batch-1 classifier streams its weights at a fraction of
the memory's speed (AlexNet's three fully connected layers hold 58M weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects import graph as g
from passes.transforms.fold_constants import prop


class StoreGemmWeightUntransposed(RewritePattern):
    """gemm(a, constant B, trans_b = 1) -> gemm(a, constant B^T, trans_b = 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GemmOp, rewriter: PatternRewriter) -> None:
        old = op.b.owner
        if not prop(op, "trans_b") or not isinstance(old, g.ConstantOp):
            return
        w = g.constant_value(old)
        if w.ndim != 2:
            return
        weight = g.ConstantOp(np.ascontiguousarray(w.T))
        weight.results[0].name_hint = op.b.name_hint
        properties = {**op.properties, "trans_b": g.i64_attr(0)}
        rewriter.replace(op, [weight, g.GemmOp(op.a, weight, op.c, **properties)])
        if not old.results[0].uses:
            rewriter.erase(old)


@dataclass(frozen=True)
class TransposeWeightsPass(ModulePass):
    name = "transpose-weights"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(StoreGemmWeightUntransposed(), apply_recursively=False).rewrite_module(
            op
        )
