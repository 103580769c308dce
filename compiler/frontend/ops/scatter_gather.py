"""Converters of the indexed gathers and scatters (GatherND, GatherElements, ScatterND,
ScatterElements, OneHot), composed of graph ops.

Every index in these operators addresses an element (or slice) of a statically shaped tensor,
so it becomes a linear offset into the flattened tensor: run-time indices are normalized
(negative ones counted from the end, then clamped like graph.gather does), multiplied by static
strides and summed, and one graph.gather on the flattened data reads the result. Scatters,
whose targets are only known at run time, compare each output position with every update's
target (a match matrix built by broadcasting) and reduce over the updates; they are refused
above a size limit rather than allowed to explode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    text,
)
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.dense import numpy_dtype


def strides(shape: Sequence[int]) -> np.ndarray:
    """Row-major element strides of a shape (int64)."""
    out = np.ones(len(shape), dtype=np.int64)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * shape[k + 1]
    return out


def as_i64(imp: Importer, v: SSAValue) -> SSAValue:
    return v if element_type_of(v) == i64 else imp.op(g.CastOp(v, to="i64"))


def runtime_index(
    imp: Importer, idx: SSAValue, extent: int | np.ndarray, what: str | None = None
) -> SSAValue:
    """Run-time indices (i64) with negative ones counted from the end of `extent` (a number, or
    one per component along idx's last axis), then clamped into [0, extent) as graph.gather
    does: an out-of-range index never reads outside the tensor. `what` (the read, for the
    error): the executable refuses a run whose indices fell out of range (check_indices)."""
    ext = np.asarray(extent, dtype=np.int64)
    if what is not None and ext.ndim == 0:
        imp.check_indices(idx, int(ext), what)
    elif what is not None and ext.ndim == 1:
        last = len(imp.shape_of(idx)) - 1
        for j, e in enumerate(ext.tolist()):
            part = imp.op(g.GatherOp(idx, imp.constant(np.int64(j)), axis=last))
            imp.check_indices(part, int(e), f"{what} (component {j})")
    zero = imp.constant(np.int64(0))
    neg = imp.op(g.LessOp(idx, zero))
    idx = imp.op(g.WhereOp(neg, imp.op(g.AddOp(idx, imp.constant(ext))), idx))
    idx = imp.op(g.MaxOp(idx, zero))
    return imp.op(g.MinOp(idx, imp.constant(ext - 1)))


def _read(imp: Importer, node: onnx.NodeProto, axis: int | None = None) -> str:
    """The read of node's indices (input 1) into its data (input 0), as errors name it."""
    into = "" if axis is None else f"axis {axis} of "
    return (
        f"{node.op_type} node '{imp.label}': an index of '{node.input[1]}' into "
        f"{into}'{node.input[0]}'"
    )


def static_index(imp: Importer, idx: np.ndarray, extent: int | np.ndarray, what: str) -> np.ndarray:
    """Import-time indices checked to lie in [-extent, extent) and normalized (int64)."""
    if not np.issubdtype(idx.dtype, np.integer):
        raise imp.error(f"{what} must be integers, got {idx.dtype}")
    ext = np.asarray(extent, dtype=np.int64)
    bad = (idx < -ext) | (idx >= ext)
    if bad.any():
        raise imp.error(f"{what} out of range: {idx[bad].reshape(-1)[:4].tolist()} (extent {ext})")
    return np.where(idx < 0, idx + ext, idx).astype(np.int64)


def _flat(imp: Importer, x: SSAValue, lead: int) -> SSAValue:
    """x with its first `lead` dims merged into one."""
    s = imp.shape_of(x)
    return imp.op(g.ReshapeOp(x, [math.prod(s[:lead]), *s[lead:]]))


# ----------------------------------------------------------------------------- gathers


@converter("GatherND")
def convert_gather_nd(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """data[batch..., idx[..., 0], ..., idx[..., k-1]] as one gather on data with its batch
    and indexed dims merged: the linear index is batch offset + sum(idx * strides)."""
    ds, qs = imp.shape(node.input[0]), imp.shape(node.input[1])
    b = int(attrs(node).get("batch_dims", 0))
    if not qs:
        raise imp.error("indices must have rank >= 1")
    k = qs[-1]
    if b < 0 or b >= min(len(ds), len(qs)):
        raise imp.error(
            f"batch_dims {b} must be in [0, {min(len(ds), len(qs))}) for data of rank "
            f"{len(ds)} and indices of rank {len(qs)}"
        )
    if tuple(ds[:b]) != tuple(qs[:b]):
        raise imp.error(f"the batch dims of data {list(ds[:b])} and indices {list(qs[:b])} differ")
    if not 1 <= k <= len(ds) - b:
        raise imp.error(
            f"indices' last dim ({k}) must be in [1, {len(ds) - b}] (data rank {len(ds)} minus "
            f"batch_dims {b})"
        )
    dims = np.asarray(ds[b : b + k], dtype=np.int64)
    inner = math.prod(ds[b : b + k])
    st = strides(ds[b : b + k])
    batch = (np.arange(math.prod(ds[:b]), dtype=np.int64) * inner).reshape(
        *qs[:b], *[1] * (len(qs) - 1 - b)
    )
    data = _flat(imp, imp.value(node.input[0]), b + k)
    idx_c = imp.const(node.input[1])
    if idx_c is not None:
        n = static_index(imp, idx_c, dims, f"indices ('{node.input[1]}')")
        lin_c = (n * st).sum(axis=-1) + batch
        lin = imp.op(g.ConstantOp(np.asarray(lin_c, dtype=np.int64)))
    else:
        nv = runtime_index(imp, as_i64(imp, imp.value(node.input[1])), dims, _read(imp, node))
        if k == 1:
            lin = imp.op(g.ReshapeOp(nv, list(qs[:-1])))
        else:
            weighted = imp.op(g.MulOp(nv, imp.constant(st)))
            lin = imp.op(g.ReduceSumOp(weighted, axes=[len(qs) - 1], keepdims=0))
        if b > 0:
            lin = imp.op(g.AddOp(lin, imp.constant(batch)))
    return [imp.op(g.GatherOp(data, lin, axis=0))]


def _offsets_across(shape: Sequence[int], st: np.ndarray, axis: int) -> np.ndarray:
    """For each position p of `shape`: the flat offset (strides `st`) of p's coordinates other
    than `axis` (the elementwise gather and scatter add index * st[axis] to it)."""
    coords = np.indices(shape, dtype=np.int64)
    offset = np.zeros(shape, dtype=np.int64)
    for d in range(len(st)):
        if d != axis:
            offset += coords[d] * st[d]
    return offset


def elements_gather(
    imp: Importer,
    data: SSAValue,
    out_shape: Sequence[int],
    axis: int,
    index: SSAValue | np.ndarray,
) -> SSAValue:
    """out[p] = data[p with p[axis] replaced by index[p]] for p over `out_shape` (index:
    normalized import-time values, or normalized run-time ones; either broadcasts to
    out_shape): one gather on the flattened data at the static offset of p's other coordinates
    plus index * stride(axis)."""
    ds = imp.shape_of(data)
    st = strides(ds)
    offset = _offsets_across(out_shape, st, axis)
    flat = imp.op(g.ReshapeOp(data, [math.prod(ds)]))
    if isinstance(index, np.ndarray):
        lin = imp.op(g.ConstantOp(np.broadcast_to(index * st[axis] + offset, out_shape).copy()))
    else:
        lin = index
        if st[axis] != 1:
            lin = imp.op(g.MulOp(lin, imp.constant(np.int64(st[axis]))))
        lin = imp.op(g.AddOp(lin, imp.constant(offset)))
    return imp.op(g.GatherOp(flat, lin, axis=0))


@converter("GatherElements")
def convert_gather_elements(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    ds, qs = imp.shape(node.input[0]), imp.shape(node.input[1])
    if len(ds) != len(qs):
        raise imp.error(f"indices have rank {len(qs)}, data {len(ds)}; they must be equal")
    axis = S.normalize_axis(int(attrs(node).get("axis", 0)), len(ds))
    for d, (a, q) in enumerate(zip(ds, qs, strict=True)):
        if d != axis and q > a:
            raise imp.error(f"indices' dim {d} ({q}) exceeds data's ({a})")
    data = imp.value(node.input[0])
    idx_c = imp.const(node.input[1])
    if idx_c is not None:
        index: SSAValue | np.ndarray = static_index(
            imp, idx_c, ds[axis], f"indices ('{node.input[1]}')"
        )
    else:
        index = runtime_index(
            imp, as_i64(imp, imp.value(node.input[1])), ds[axis], _read(imp, node, axis)
        )
    return [elements_gather(imp, data, qs, axis, index)]


@converter("ReverseSequence")
def convert_reverse_sequence(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Each batch entry's first sequence_lens[b] time steps reversed: an elements-gather along
    the time axis at t' = len - 1 - t where t < len, else t."""
    a = attrs(node)
    ds = imp.shape(node.input[0])
    if len(ds) < 2:
        raise imp.error(f"input must have rank >= 2, got {len(ds)}")
    batch = S.normalize_axis(int(a.get("batch_axis", 1)), len(ds))
    time = S.normalize_axis(int(a.get("time_axis", 0)), len(ds))
    if batch == time or {batch, time} != {0, 1}:
        raise imp.error(f"batch_axis {batch} and time_axis {time} must be 0 and 1, one each")
    if imp.shape(node.input[1]) != (ds[batch],):
        raise imp.error(
            f"sequence_lens must have shape [{ds[batch]}], got {list(imp.shape(node.input[1]))}"
        )
    bshape = [1] * len(ds)
    bshape[batch] = ds[batch]
    tshape = [1] * len(ds)
    tshape[time] = ds[time]
    t = np.arange(ds[time], dtype=np.int64).reshape(tshape)
    lens_c = imp.const(node.input[1])
    data = imp.value(node.input[0])
    if lens_c is not None:
        lens = np.clip(lens_c.astype(np.int64), 0, ds[time]).reshape(bshape)
        index: SSAValue | np.ndarray = np.where(t < lens, lens - 1 - t, t)
    else:
        lens_v = imp.op(g.ReshapeOp(as_i64(imp, imp.value(node.input[1])), bshape))
        tc = imp.constant(t)
        rev = imp.op(g.SubOp(imp.op(g.SubOp(lens_v, imp.constant(np.int64(1)))), tc))
        index = imp.op(g.WhereOp(imp.op(g.LessOp(tc, lens_v)), rev, tc))
    return [elements_gather(imp, data, ds, time, index)]


@converter("OneHot")
def convert_one_hot(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Where(indices == iota(depth), on, off), the iota static and broadcast along `axis`;
    negative indices count from depth, out-of-range ones match nothing."""
    qs = imp.shape(node.input[0])
    depth_c = imp.const_input(node, 1, "depth")
    if depth_c.size != 1:
        raise imp.error(f"depth must hold one number, got shape {list(depth_c.shape)}")
    depth = int(depth_c.reshape(-1)[0])
    if depth < 1:
        raise imp.error(f"depth must be positive, got {depth}")
    axis = S.normalize_axis(int(attrs(node).get("axis", -1)), len(qs) + 1)
    if imp.shape(node.input[2]) != (2,):
        raise imp.error(f"values must be [off, on], got shape {list(imp.shape(node.input[2]))}")
    idx = imp.value(node.input[0])
    if element_type_of(idx) != i64:
        idx = imp.op(g.CastOp(idx, to="i64"))  # float indices truncate, as onnxruntime does
    neg = imp.op(g.LessOp(idx, imp.constant(np.int64(0))))
    idx = imp.op(g.WhereOp(neg, imp.op(g.AddOp(idx, imp.constant(np.int64(depth)))), idx))
    idx = imp.op(g.ReshapeOp(idx, [*qs[:axis], 1, *qs[axis:]]))
    iota = np.arange(depth, dtype=np.int64).reshape([1] * axis + [depth] + [1] * (len(qs) - axis))
    hit = imp.op(g.EqualOp(idx, imp.constant(iota)))
    values = imp.value(node.input[2])
    off = imp.op(g.GatherOp(values, imp.constant(np.int64(0)), axis=0))
    on = imp.op(g.GatherOp(values, imp.constant(np.int64(1)), axis=0))
    return [imp.op(g.WhereOp(hit, on, off))]


# ----------------------------------------------------------------------------- scatters

REDUCTIONS = ("none", "add", "mul", "max", "min")


def _product_over_axis1(imp: Importer, x: SSAValue) -> SSAValue:
    """The product over axis 1 of a 3-D tensor by halving (log2 n multiplies)."""
    while (n := imp.shape_of(x)[1]) > 1:
        m, r = imp.shape_of(x)[0], imp.shape_of(x)[2]
        half = n // 2

        def part(lo: int, hi: int, x: SSAValue = x, m: int = m, r: int = r) -> SSAValue:
            return imp.op(g.SliceOp(x, starts=[0, lo, 0], ends=[m, hi, r], steps=[1, 1, 1]))

        y = imp.op(g.MulOp(part(0, half), part(half, 2 * half)))
        x = y if n % 2 == 0 else imp.op(g.ConcatOp([y, part(2 * half, n)], axis=1))
    return x


def _combine(imp: Importer, reduction: str, acc: SSAValue, val: SSAValue) -> SSAValue:
    ops = {"add": g.AddOp, "mul": g.MulOp, "max": g.MaxOp, "min": g.MinOp}
    return imp.op(ops[reduction](acc, val))


def scatter_rows(
    imp: Importer,
    data: SSAValue,
    updates: SSAValue,
    target: SSAValue | np.ndarray,
    reduction: str,
) -> SSAValue:
    """data [M, R] with updates [U, R] written (or combined by `reduction`) into the rows
    `target` [U] (normalized; run-time or import-time)."""
    m, r = imp.shape_of(data)
    u = imp.shape_of(updates)[0]
    if isinstance(target, np.ndarray):
        # static targets: per output row, the updates that land there, in order; one gather
        # per level of multiplicity (reduction none: only the last writer counts)
        slots: list[list[int]] = [[] for _ in range(m)]
        for k, row in enumerate(target.tolist()):
            slots[row] = [k] if reduction == "none" else [*slots[row], k]
        acc = data
        for level in range(max(len(s) for s in slots)):
            src = np.array([s[level] if level < len(s) else 0 for s in slots], dtype=np.int64)
            mask = np.array([level < len(s) for s in slots]).reshape(m, 1)
            val = imp.op(g.GatherOp(updates, imp.op(g.ConstantOp(src)), axis=0))
            if reduction != "none":
                val = _combine(imp, reduction, acc, val)
            acc = imp.op(g.WhereOp(imp.op(g.ConstantOp(mask)), val, acc))
        return acc
    size = m * u * (1 if reduction == "none" else r) + m * r
    imp.check_composed(
        size,
        f"scattering {u} run-time indexed updates into {m} positions would build {size} "
        "intermediate elements",
    )
    rows = imp.constant(np.arange(m, dtype=np.int64).reshape(m, 1))
    match = imp.op(g.EqualOp(rows, imp.op(g.ReshapeOp(target, [1, u]))))  # [M, U]
    hit = imp.op(g.ReshapeOp(imp.op(g.ReduceMaxOp(match, axes=[1], keepdims=1)), [m, 1]))
    if reduction == "none":  # the last update aimed at each row wins
        order = imp.constant(np.arange(u, dtype=np.int64).reshape(1, u))
        last = imp.op(g.WhereOp(match, order, imp.constant(np.int64(0))))
        last = imp.op(g.ReduceMaxOp(last, axes=[1], keepdims=0))
        val = imp.op(g.GatherOp(updates, last, axis=0))
        return imp.op(g.WhereOp(hit, val, data))
    match3 = imp.op(g.ReshapeOp(match, [m, u, 1]))
    upd3 = imp.op(g.ReshapeOp(updates, [1, u, r]))
    dtype = numpy_dtype(element_type_of(data))
    if reduction == "add":
        picked = imp.op(g.WhereOp(match3, upd3, imp.constant(dtype.type(0))))
        val = imp.op(g.ReduceSumOp(picked, axes=[1], keepdims=0))
    elif reduction == "mul":
        picked = imp.op(g.WhereOp(match3, upd3, imp.constant(dtype.type(1))))
        val = imp.op(g.ReshapeOp(_product_over_axis1(imp, picked), [m, r]))
    else:
        flip = reduction == "min"
        signed = imp.op(g.NegOp(upd3)) if flip else upd3
        lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
        picked = imp.op(g.WhereOp(match3, signed, imp.constant(np.asarray(lowest, dtype=dtype))))
        val = imp.op(g.ReduceMaxOp(picked, axes=[1], keepdims=0))
        if flip:
            val = imp.op(g.NegOp(val))
    return imp.op(g.WhereOp(hit, _combine(imp, reduction, data, val), data))


def _reduction(imp: Importer, node: onnx.NodeProto, data: SSAValue) -> str:
    reduction = text(attrs(node).get("reduction", "none"))
    if reduction not in REDUCTIONS:
        raise imp.error(
            f"reduction {reduction!r} is not supported (one of {', '.join(REDUCTIONS)})"
        )
    if reduction != "none" and element_type_of(data) == i1:
        raise imp.error(f"reduction {reduction!r} on bool data is not supported")
    return reduction


def _same_type(imp: Importer, data: SSAValue, updates: SSAValue) -> None:
    if element_type_of(data) != element_type_of(updates):
        raise imp.error(
            f"updates ({element_type_of(updates)}) must have the data's element type "
            f"({element_type_of(data)})"
        )


@converter("ScatterND")
def convert_scatter_nd(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """data's slices at idx[..., :k] replaced by (or combined with) updates: the data as rows of
    its first k dims merged, each update slice a row."""
    ds, qs, us = (imp.shape(node.input[i]) for i in range(3))
    if not qs:
        raise imp.error("indices must have rank >= 1")
    k = qs[-1]
    if not 1 <= k <= len(ds):
        raise imp.error(f"indices' last dim ({k}) must be in [1, {len(ds)}] (the data's rank)")
    if tuple(us) != (*qs[:-1], *ds[k:]):
        raise imp.error(f"updates must have shape {[*qs[:-1], *ds[k:]]}, got {list(us)}")
    data, updates = imp.value(node.input[0]), imp.value(node.input[2])
    _same_type(imp, data, updates)
    reduction = _reduction(imp, node, data)
    dims = np.asarray(ds[:k], dtype=np.int64)
    st = strides(ds[:k])
    u, rest = math.prod(qs[:-1]), math.prod(ds[k:])
    idx_c = imp.const(node.input[1])
    target: SSAValue | np.ndarray
    if idx_c is not None:
        n = static_index(imp, idx_c, dims, f"indices ('{node.input[1]}')")
        target = (n * st).sum(axis=-1).reshape(u)
    else:
        nv = runtime_index(imp, as_i64(imp, imp.value(node.input[1])), dims, _read(imp, node))
        nv = imp.op(g.ReshapeOp(nv, [u, k]))
        target = imp.op(g.ReduceSumOp(imp.op(g.MulOp(nv, imp.constant(st))), axes=[1], keepdims=0))
    rows = scatter_rows(
        imp,
        imp.op(g.ReshapeOp(data, [math.prod(ds[:k]), rest])),
        imp.op(g.ReshapeOp(updates, [u, rest])),
        target,
        reduction,
    )
    return [imp.op(g.ReshapeOp(rows, list(ds)))]


@converter("ScatterElements")
def convert_scatter_elements(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """data with data[p with p[axis] = idx[p]] = updates[p]: every element a row of one."""
    ds, qs, us = (imp.shape(node.input[i]) for i in range(3))
    if len(qs) != len(ds) or tuple(us) != tuple(qs):
        raise imp.error(
            f"indices {list(qs)} and updates {list(us)} must have one shape, of the data's "
            f"rank {len(ds)}"
        )
    axis = S.normalize_axis(int(attrs(node).get("axis", 0)), len(ds))
    for d, (a, q) in enumerate(zip(ds, qs, strict=True)):
        if d != axis and q > a:
            raise imp.error(f"indices' dim {d} ({q}) exceeds data's ({a})")
    data, updates = imp.value(node.input[0]), imp.value(node.input[2])
    _same_type(imp, data, updates)
    reduction = _reduction(imp, node, data)
    st = strides(ds)
    offset = _offsets_across(qs, st, axis)
    u = math.prod(qs)
    idx_c = imp.const(node.input[1])
    target: SSAValue | np.ndarray
    if idx_c is not None:
        n = static_index(imp, idx_c, ds[axis], f"indices ('{node.input[1]}')")
        target = (n * st[axis] + offset).reshape(u)
    else:
        nv = runtime_index(
            imp, as_i64(imp, imp.value(node.input[1])), ds[axis], _read(imp, node, axis)
        )
        if st[axis] != 1:
            nv = imp.op(g.MulOp(nv, imp.constant(np.int64(st[axis]))))
        target = imp.op(g.ReshapeOp(imp.op(g.AddOp(nv, imp.constant(offset))), [u]))
    rows = scatter_rows(
        imp,
        imp.op(g.ReshapeOp(data, [math.prod(ds), 1])),
        imp.op(g.ReshapeOp(updates, [u, 1])),
        target,
        reduction,
    )
    return [imp.op(g.ReshapeOp(rows, list(ds)))]
