"""Unique (opset 11+): the distinct elements (or slices along `axis`) of a tensor, sorted or in
order of first occurrence, with their first indices, the inverse map and their counts.

The number of distinct values is known only at run time, so Y (along `axis`, or 0), indices and
counts are allocated at their upper bound (the number of elements or slices) and marked with
that number (`Importer.bounded`); inverse_indices has a static length. Everything is composed
from an n x n pairwise comparison of the n elements or slices: `same[i, j]` (equal) and
`before[i, j]` (slice j sorts before slice i, lexicographically); slice i is a first occurrence
when no j < i is the same, and its output slot is the number of first occurrences that come
before it (sorting below it, or preceding it when unsorted).

NaN: NaN equals NaN and sorts after every number, as numpy's `unique` (which generates the
node tests) does for a flattened tensor; slices along an axis are compared the same way, each
position equal or both NaN. -0.0 equals 0.0, and Y holds the first occurrence's value.

Where onnx's reference implementation departs from the spec, the spec is followed: with
sorted=0 and Y as the only output it returns Y sorted, and with sorted=0 it gathers Y along
axis 0 whatever the axis (and from the unflattened tensor when there is no axis)."""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i1, i32, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
)
from dialects import graph as g


def _pairwise(imp: Importer, rows: SSAValue) -> tuple[SSAValue, SSAValue]:
    """For rows [m, r]: same[i, j] (rows i and j are equal, NaN equal to NaN) and before[i, j]
    (row j sorts strictly before row i: at the first position where they differ, row j is
    less, NaN being greater than every number), both [m, m] i1."""
    m, r = imp.shape_of(rows)
    a = imp.op(g.UnsqueezeOp(rows, axes=[1]))  # [m, 1, r]: row i
    b = imp.op(g.UnsqueezeOp(rows, axes=[0]))  # [1, m, r]: row j
    equal = imp.op(g.EqualOp(a, b))
    lower = imp.op(g.LessOp(b, a))
    if element_type_of(rows) == f32:
        nan = imp.op(g.NotOp(imp.op(g.EqualOp(rows, rows))))
        nan_a = imp.op(g.UnsqueezeOp(nan, axes=[1]))
        nan_b = imp.op(g.UnsqueezeOp(nan, axes=[0]))
        equal = imp.op(g.OrOp(equal, imp.op(g.AndOp(nan_a, nan_b))))
        # a number sorts before NaN
        lower = imp.op(g.OrOp(lower, imp.op(g.AndOp(nan_a, imp.op(g.NotOp(nan_b))))))
    if r == 1:
        return (
            imp.op(g.ReshapeOp(equal, shape=[m, m])),
            imp.op(g.ReshapeOp(lower, shape=[m, m])),
        )
    same = imp.op(g.NotOp(imp.op(g.ReduceMaxOp(imp.op(g.NotOp(equal)), axes=[2], keepdims=0))))
    # the first position where rows i and j differ (r where they do not): -max(-t)
    positions = np.arange(r, dtype=np.int64)
    negated = imp.op(g.WhereOp(equal, imp.constant(np.int64(-r)), imp.constant(-positions)))
    first_diff = imp.op(g.ReduceMaxOp(negated, axes=[2], keepdims=1))  # [m, m, 1], negated
    at_first = imp.op(g.EqualOp(first_diff, imp.constant(-positions)))  # [m, m, r]
    before = imp.op(g.ReduceMaxOp(imp.op(g.AndOp(lower, at_first)), axes=[2], keepdims=0))
    return same, before


def _count(imp: Importer, mask: SSAValue, values: SSAValue | None, axis: int) -> SSAValue:
    """The sum along `axis` of `values` (or of ones) where `mask` holds: an i64 count."""
    one = values if values is not None else imp.constant(np.int64(1))
    terms = imp.op(g.WhereOp(mask, one, imp.constant(np.int64(0))))
    return imp.op(g.ReduceSumOp(terms, axes=[axis], keepdims=0))


@converter("Unique")
def convert_unique(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    sorted_ = int(a.get("sorted", 1))
    if sorted_ not in (0, 1):
        raise imp.error(f"sorted must be 0 or 1, got {sorted_}")
    if "axis" in a:
        axis = int(a["axis"])
        if not -rank <= axis < rank:
            raise imp.error(f"axis {axis} is out of range for an input of rank {rank}")
        axis %= rank
        m = shape[axis]
        perm = [axis, *(d for d in range(rank) if d != axis)]
        moved = imp.op(g.TransposeOp(x, perm=perm)) if axis else x
        rows = imp.op(g.ReshapeOp(moved, shape=[m, int(np.prod(shape)) // m]))
        source, y_axis = x, axis
    else:  # over the flattened tensor
        m = int(np.prod(shape))
        source = imp.op(g.ReshapeOp(x, shape=[m]))
        rows = imp.op(g.ReshapeOp(x, shape=[m, 1]))
        y_axis = 0
    r = imp.shape_of(rows)[1]
    what = f"{m} slices of {r} elements" if "axis" in a else f"{m} elements"
    imp.check_composed(m * m * r, f"Unique over {what} needs {m * m * r} pairwise comparisons")
    if element_type_of(rows) == i1:  # compared as integers
        rows = imp.op(g.CastOp(rows, to=str(i32)))

    same, before = _pairwise(imp, rows)
    earlier = imp.constant(np.tri(m, k=-1, dtype=np.bool_))  # [i, j]: j < i
    first = imp.op(  # no earlier row is the same: [m]
        g.NotOp(imp.op(g.ReduceMaxOp(imp.op(g.AndOp(same, earlier)), axes=[1], keepdims=0)))
    )
    first_j = imp.op(g.UnsqueezeOp(first, axes=[0]))  # [1, m]: as row j
    count = imp.op(g.ReduceSumOp(imp.op(g.CastOp(first, to=str(i64))), axes=[0], keepdims=0))
    # the output slot of each first occurrence: the first occurrences placed before it
    ahead = before if sorted_ else earlier
    slot = _count(imp, imp.op(g.AndOp(ahead, first_j)), None, 1)  # [m]
    # match[k, i]: first occurrence i goes to slot k (no i for slots past the count)
    slots = imp.constant(np.arange(m, dtype=np.int64)[:, None])
    match = imp.op(
        g.AndOp(imp.op(g.EqualOp(imp.op(g.UnsqueezeOp(slot, axes=[0])), slots)), first_j)
    )
    wanted = [i < len(node.output) and node.output[i] != "" for i in range(4)]
    empty = np.zeros(0, np.int64)  # in place of an output the node does not name
    outs: list[Value] = [empty] * 4
    indices = _count(imp, match, imp.constant(np.arange(m, dtype=np.int64)), 1)
    if wanted[0]:
        y = imp.op(g.GatherOp(source, indices, axis=y_axis))
        valid_shape = [1] * len(imp.shape_of(y))
        valid_shape[y_axis] = m
        valid = imp.op(g.LessOp(imp.constant(np.arange(m).reshape(valid_shape)), count))
        y = imp.op(g.WhereOp(valid, y, imp.scalar(0, like=y)))
        outs[0] = imp.bounded(y, y_axis, count)
    if wanted[1]:
        outs[1] = imp.bounded(indices, 0, count)
    if wanted[2]:  # the slot of each element's first occurrence
        of_first = imp.op(g.AndOp(same, first_j))
        outs[2] = _count(imp, of_first, imp.op(g.UnsqueezeOp(slot, axes=[0])), 1)
    if wanted[3]:
        sizes = _count(imp, same, None, 1)  # [m]: how many rows equal row i
        counts = _count(imp, match, imp.op(g.UnsqueezeOp(sizes, axes=[0])), 1)
        outs[3] = imp.bounded(counts, 0, count)
    return outs[: len(node.output)]
