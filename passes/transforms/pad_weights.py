"""`pad-weights`: a matmul's constant B [K, N] whose N is not a multiple of the vector width is
stored zero-padded to the next multiple at compile time, and the product sliced back to N.

Why: with N off the vector width every row of B and of the result starts at a different offset
in its cache line, so every vector load and store of the kernel straddles two lines, and the
last vector of each row is a scalar remainder. GPT-2's LM head (N = 50,257, a third of the
model's multiply-adds) ran at 0.62x the speed of the same product with N = 50,272 (Zen 4, one
thread, 128 x 768 x N). The slice costs one pass over the result; it is done only where that
is small against the product (N at least MIN_COLUMNS_PER_LANE vectors wide, K at least
MIN_DEPTH).
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
from passes.schedule.cpu_target import cpu_target
from passes.schedule.options import check_width_option
from passes.transforms.constant_weights import constant_weight, relayout_weight

MIN_COLUMNS_PER_LANE = 16
"""N must span at least this many vectors: the padding then adds at most 1/16 of the work."""
MIN_DEPTH = 64
"""K at least this: the product then costs K multiply-adds per element the slice copies."""


class PadMatmulWeight(RewritePattern):
    """matmul(a, constant B [K, N]) -> slice(matmul(a, B padded to [K, N']), N)."""

    def __init__(self, width: int) -> None:
        self.width = width

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatmulOp, rewriter: PatternRewriter) -> None:
        w = constant_weight(op)
        if w is None or len(op.a.type.get_shape()) < 2:  # type: ignore[attr-defined]
            return
        k, n = w.shape
        if n % self.width == 0 or n < MIN_COLUMNS_PER_LANE * self.width or k < MIN_DEPTH:
            return
        padded_n = -(-n // self.width) * self.width
        weight = g.ConstantOp(np.pad(w, ((0, 0), (0, padded_n - n))))
        product = g.MatmulOp(op.a, weight)
        out_shape = list(product.result.type.get_shape())
        sliced = g.SliceOp(
            product,
            starts=[0] * len(out_shape),
            ends=[*out_shape[:-1], n],
            steps=[1] * len(out_shape),
        )
        relayout_weight(rewriter, op, weight, [weight, product, sliced])


@dataclass(frozen=True)
class PadWeightsPass(ModulePass):
    name = "pad-weights"

    width: int | None = None
    """Vector width in f32 lanes; omitted: this CPU's widest."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_width_option(self.name, self.width)
        width = self.width or cpu_target().width
        PatternRewriteWalker(PadMatmulWeight(width), apply_recursively=False).rewrite_module(op)
