"""Converters of the ordering operators (ArgMax, ArgMin, Hardmax, TopK, CumSum), composed of
reductions, comparisons against static index arrays (iotas, triangular masks) and Where.

Every shape is static, so the positions along the reduced axis are numpy constants: an arg
reduction is a max, an equality with it and a max over the matching positions; TopK ranks each
element by counting the elements that beat it; CumSum sums under a triangular mask."""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
)
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.dense import numpy_dtype


def _iota(n: int, axis: int, rank: int) -> np.ndarray:
    """0..n-1 (int64) laid along `axis` of a rank-`rank` array of unit dims elsewhere."""
    shape = [1] * rank
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def _is_float(v: SSAValue) -> bool:
    return element_type_of(v) == f32


def _check_numeric(imp: Importer, x: SSAValue) -> None:
    if element_type_of(x) not in (f32, i64, i32):
        raise imp.error(f"needs a numeric input, got element type {element_type_of(x)}")


def _flip(imp: Importer, x: SSAValue) -> SSAValue:
    """An order-reversing map: -x for floats, -1 - x (bitwise not, no overflow) for integers."""
    if _is_float(x):
        return imp.op(g.NegOp(x))
    return imp.op(g.SubOp(imp.scalar(-1, like=x), x))


def _isnan(imp: Importer, x: SSAValue) -> SSAValue:
    return imp.op(g.NotOp(imp.op(g.EqualOp(x, x))))


def _lowest(x: SSAValue) -> float | int:
    """The least value of x's element type (the identity of max)."""
    dt = numpy_dtype(element_type_of(x))
    return -math.inf if np.issubdtype(dt, np.floating) else int(np.iinfo(dt).min)


def arg_max(
    imp: Importer, x: SSAValue, axis: int, keepdims: int, last: bool, largest: bool = True
) -> SSAValue:
    """The int64 position of the largest (or smallest) element along `axis`: the first one, or
    the last one if `last`. A nan counts as the extreme value (as numpy and onnxruntime)."""
    _check_numeric(imp, x)
    shape = imp.shape_of(x)
    n = shape[axis]
    key = x if largest else _flip(imp, x)
    m = imp.op(g.ReduceMaxOp(key, axes=[axis], keepdims=1))
    hit = imp.op(g.EqualOp(key, m))
    if _is_float(x):  # a nan maximum equals nothing: the nans are the hits then
        hit = imp.op(g.OrOp(hit, _isnan(imp, x)))
    pos = _iota(n, axis, len(shape))
    none = imp.constant(np.int64(-1))
    if last:
        where = imp.op(g.WhereOp(hit, imp.constant(pos), none))
        return imp.op(g.ReduceMaxOp(where, axes=[axis], keepdims=keepdims))
    # the first hit has the largest reversed position n-1-i
    rev = imp.op(g.WhereOp(hit, imp.constant(n - 1 - pos), none))
    r = imp.op(g.ReduceMaxOp(rev, axes=[axis], keepdims=keepdims))
    return imp.op(g.SubOp(imp.scalar(n - 1, like=r), r))


@converter("ArgMax", "ArgMin")
def convert_arg_max(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    x = imp.value(node.input[0])
    axis = S.normalize_axis(int(a.get("axis", 0)), len(imp.shape_of(x)))
    keepdims = int(a.get("keepdims", 1))
    last = bool(a.get("select_last_index", 0))
    return [arg_max(imp, x, axis, keepdims, last, largest=node.op_type == "ArgMax")]


@converter("Hardmax")
def convert_hardmax(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """1 at the first largest element along the axis, 0 elsewhere; before opset 13 along the
    2-D coercion [prod(shape[:axis]), prod(shape[axis:])]."""
    x = imp.value(node.input[0])
    if not _is_float(x):
        raise imp.error(f"needs a float input, got element type {element_type_of(x)}")
    shape = imp.shape_of(x)
    legacy = imp.opset < 13
    axis = S.normalize_axis(int(attrs(node).get("axis", 1 if legacy else -1)), len(shape))
    work = x
    if legacy:
        work = imp.op(g.ReshapeOp(x, [math.prod(shape[:axis]), math.prod(shape[axis:])]))
        axis = 1
    wshape = imp.shape_of(work)
    first = arg_max(imp, work, axis, 1, last=False)
    pos = imp.constant(_iota(wshape[axis], axis, len(wshape)))
    y = imp.op(g.CastOp(imp.op(g.EqualOp(pos, first)), to="f32"))
    return [imp.op(g.ReshapeOp(y, shape)) if legacy else y]


def _check_pairwise(imp: Importer, shape: tuple[int, ...], axis: int, what: str) -> None:
    n = shape[axis]
    total = math.prod(shape) * n
    imp.check_composed(
        total,
        f"{what} along an axis of {n} elements of a {list(shape)} tensor needs {total} "
        "pairwise comparisons",
    )


@converter("TopK")
def convert_top_k(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The k largest (smallest) elements along an axis and their int64 positions, sorted, ties
    by lower position (ONNX). Each element's rank is the number of elements that beat it
    (larger, or equal and earlier); output slot r takes the element of rank r. A nan counts as
    larger than any number."""
    a = attrs(node)
    x = imp.value(node.input[0])
    _check_numeric(imp, x)
    shape = imp.shape_of(x)
    rank = len(shape)
    axis = S.normalize_axis(int(a.get("axis", -1)), rank)
    largest = bool(a.get("largest", 1))
    ks = imp.int_input(node, 1, "K")
    if len(ks) != 1:
        raise imp.error(f"input K must hold one value, got {len(ks)}")
    n, k = shape[axis], ks[0]
    if not 1 <= k <= n:
        raise imp.error(f"K = {k} is out of range for an axis of {n} elements (1 to {n})")
    _check_pairwise(imp, shape, axis, "TopK")
    # axis last: t [..., n]; xi [..., n, 1] (element i), xj [..., 1, n] (its rival j)
    perm = [d for d in range(rank) if d != axis] + [axis]
    t = imp.op(g.TransposeOp(x, perm=perm)) if axis != rank - 1 else x
    outer = [shape[d] for d in perm[:-1]]
    xi = imp.op(g.ReshapeOp(t, [*outer, n, 1]))
    xj = imp.op(g.ReshapeOp(t, [*outer, 1, n]))
    ki, kj = (xi, xj) if largest else (_flip(imp, xi), _flip(imp, xj))
    earlier = imp.constant(np.arange(n)[None, :] < np.arange(n)[:, None])  # [i, j]: j < i
    tie = imp.op(g.EqualOp(kj, ki))
    if _is_float(x):
        ni, nj = _isnan(imp, xi), _isnan(imp, xj)
        tie = imp.op(g.OrOp(tie, imp.op(g.AndOp(ni, nj))))
        nan_wins = (nj, ni) if largest else (ni, nj)  # (the nan one, the number)
        wins = imp.op(
            g.OrOp(
                imp.op(g.GreaterOp(kj, ki)),
                imp.op(g.AndOp(nan_wins[0], imp.op(g.NotOp(nan_wins[1])))),
            )
        )
    else:
        wins = imp.op(g.GreaterOp(kj, ki))
    beats = imp.op(g.OrOp(wins, imp.op(g.AndOp(tie, earlier))))
    ranks = imp.op(
        g.ReduceSumOp(imp.op(g.CastOp(beats, to="i64")), axes=[rank], keepdims=0)
    )  # [..., n]
    slot = imp.op(
        g.EqualOp(
            imp.op(g.ReshapeOp(ranks, [*outer, 1, n])),
            imp.constant(np.arange(k, dtype=np.int64).reshape(k, 1)),
        )
    )  # [..., k, n]: element i goes to slot r
    positions = imp.op(
        g.WhereOp(slot, imp.constant(np.arange(n, dtype=np.int64)), imp.constant(np.int64(-1)))
    )
    indices = imp.op(g.ReduceMaxOp(positions, axes=[rank], keepdims=0))
    chosen = imp.op(g.WhereOp(slot, xj, imp.scalar(_lowest(x), like=x)))
    values = imp.op(g.ReduceMaxOp(chosen, axes=[rank], keepdims=0))
    if axis != rank - 1:
        back = [perm.index(d) for d in range(rank)]
        values = imp.op(g.TransposeOp(values, perm=back))
        indices = imp.op(g.TransposeOp(indices, perm=back))
    return [values, indices]


@converter("CumSum", "CumProd")
def convert_cumulative(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Running sums (products) along an axis: y[i] combines x[j] over j <= i (j < i if
    exclusive; j >= i, j > i if reverse), as a Where under a static [j, i] mask (0, or 1 for
    products, outside it) and a ReduceSum (ReduceProd) over j."""
    a = attrs(node)
    x = imp.value(node.input[0])
    _check_numeric(imp, x)
    shape = imp.shape_of(x)
    rank = len(shape)
    axes = imp.int_input(node, 1, "axis")
    if len(axes) != 1:
        raise imp.error(f"input axis must hold one value, got {len(axes)}")
    axis = S.normalize_axis(axes[0], rank)
    exclusive, reverse = int(a.get("exclusive", 0)), int(a.get("reverse", 0))
    _check_pairwise(imp, shape, axis, node.op_type)
    n = shape[axis]
    j, i = np.arange(n)[:, None], np.arange(n)[None, :]
    if reverse:
        mask = j > i if exclusive else j >= i
    else:
        mask = j < i if exclusive else j <= i
    mask = mask.reshape([n, n] + [1] * (rank - axis - 1))
    xj = imp.op(g.UnsqueezeOp(x, axes=[axis + 1]))  # [..., n (j), 1, ...]
    product = node.op_type == "CumProd"
    terms = imp.op(g.WhereOp(imp.constant(mask), xj, imp.scalar(int(product), like=x)))
    reduce = g.ReduceProdOp if product else g.ReduceSumOp
    return [imp.op(reduce(terms, axes=[axis], keepdims=0))]
