"""What the weight-layout passes (pad-weights, pack-weights) share: finding a matmul's constant
f32 B [K, N] and replacing the matmul by ops that read a new constant in its place."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from dialects import graph as g


def constant_weight(op: g.MatmulOp | g.GemmOp) -> np.ndarray | None:
    """The value of `op`'s B when it is a 2-D f32 constant (a layer's weights), else None."""
    b = op.b.owner
    if not isinstance(b, g.ConstantOp):
        return None
    w = g.constant_value(b)
    return w if w.ndim == 2 and w.dtype == np.float32 else None


def relayout_weight(
    rewriter: PatternRewriter,
    op: g.MatmulOp | g.GemmOp,
    weight: g.ConstantOp,
    ops: Sequence[Operation],
    replaced: Operation | None = None,
) -> None:
    """Replace `op` by `ops` (the last one gives its result; `weight`, among them, holds B in its
    new layout) and erase the old B once nothing else reads it. With `replaced` (an op reading
    `op`'s result, its only user), the last op gives that op's result instead, and both go."""
    old = op.b.owner
    target = replaced or op
    weight.results[0].name_hint = op.b.name_hint
    ops[-1].results[0].name_hint = target.results[0].name_hint
    rewriter.replace(target, list(ops))
    if target is not op:
        rewriter.erase(op)
    if isinstance(old, Operation) and not old.results[0].uses:
        rewriter.erase(old)
