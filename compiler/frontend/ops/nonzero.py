"""NonZero (opsets 9-13): the int64 coordinates of the nonzero elements, in row-major order.

Its output length is the number of nonzero elements, known only at run time, so the result is
allocated at its upper bound [rank, numel], zero past the count, and marked with the count
(`Importer.bounded`): as a model output it is trimmed when the model runs; any node reading it
is refused. The coordinates are gathered from a static table: the k-th nonzero element is at
flat position #{i : cumsum(mask)[i] <= k}, a count over a pairwise comparison like CumSum's."""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    converter,
    element_type_of,
)
from dialects import graph as g


def running_count(imp: Importer, flags: SSAValue) -> SSAValue:
    """The inclusive running sum of a 1-D i64 vector of 0/1 flags: a sum under a static
    lower-triangular [i, j] mask (j <= i)."""
    (n,) = imp.shape_of(flags)
    lower = np.arange(n)[None, :] <= np.arange(n)[:, None]
    terms = imp.op(g.WhereOp(imp.constant(lower), flags, imp.scalar(0, like=flags)))
    return imp.op(g.ReduceSumOp(terms, axes=[1], keepdims=0))


@converter("NonZero")
def convert_nonzero(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    if not shape:
        raise imp.error("a rank-0 input is not supported (NonZero needs at least one axis)")
    n = math.prod(shape)
    imp.check_composed(
        n * n, f"NonZero over {n} elements needs {n * n} pairwise comparisons to place them"
    )
    flat = imp.op(g.ReshapeOp(x, shape=[n]))
    if element_type_of(flat) == i1:
        mask = flat
    else:  # NaN is nonzero: it is not equal to 0
        mask = imp.op(g.NotOp(imp.op(g.EqualOp(flat, imp.scalar(0, like=flat)))))
    flags = imp.op(g.CastOp(mask, to=str(i64)))
    before = running_count(imp, flags)  # nonzeros at positions <= i
    count = imp.op(g.ReduceSumOp(flags, axes=[0], keepdims=0))
    # position of the k-th nonzero: how many i have at most k nonzeros up to them
    ranks = imp.constant(np.arange(n, dtype=np.int64)[:, None])  # [k, 1]
    at_most = imp.op(g.LessEqualOp(imp.op(g.UnsqueezeOp(before, axes=[0])), ranks))  # [k, i]
    where = imp.op(
        g.ReduceSumOp(imp.op(g.CastOp(at_most, to=str(i64))), axes=[1], keepdims=0)
    )  # [k], = n past the count
    where = imp.op(g.MinOp(where, imp.scalar(n - 1, like=where)))
    table = np.stack(np.unravel_index(np.arange(n), shape)).astype(np.int64)  # [rank, n]
    coords = imp.op(g.GatherOp(imp.constant(table), where, axis=1))  # [rank, k]
    valid = imp.op(g.LessOp(ranks, imp.op(g.ReshapeOp(count, shape=[1]))))  # [k, 1]
    valid = imp.op(g.ReshapeOp(valid, shape=[1, n]))
    out = imp.op(g.WhereOp(valid, coords, imp.scalar(0, like=coords)))
    return [imp.bounded(out, 1, count)]
