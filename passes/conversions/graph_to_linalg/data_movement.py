"""Constants and data movement: reshapes, transpose, concat, split, slice, gather, pad, layout
transforms (tensor slices and reshapes, or a copying linalg.generic whose map does the moving),
and the ops that forward their operand (Identity, inference-mode Dropout)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.ir import SSAValue

from dialects import graph as g
from dialects.graph_shapes import layout_block
from passes.conversions.convert_graph_to_linalg_builder import (
    Body,
    Emitter,
    cst,
    dim,
    elem_of,
    identity,
    shape_of,
)
from passes.conversions.graph_to_linalg.table import LoweringTable, copy, out_shape

DATA_MOVEMENT = LoweringTable()


@DATA_MOVEMENT.register(g.ConstantOp)
def _constant(op: g.ConstantOp, em: Emitter) -> SSAValue:
    """The same dense payload, as an arith.constant."""
    return em.add(arith.ConstantOp(op.value))


@DATA_MOVEMENT.register(g.ShapeOp)
def _shape(op: g.ShapeOp, em: Emitter) -> SSAValue:
    """A constant; with run-time dims, each size filled into its slot (`tensor.dim` for `?`)."""
    shape = shape_of(op.x)
    if DYNAMIC_INDEX not in shape:
        return em.dense(np.array(shape, dtype=np.int64))
    out = em.empty((len(shape),), i64)
    for k, d in enumerate(shape):
        if d == DYNAMIC_INDEX:
            index = em.add(arith.ConstantOp(IntegerAttr(k, IndexType())))
            size = em.add(arith.IndexCastOp(em.add(tensor.DimOp(op.x, index)), i64))
        else:
            size = em.add(arith.ConstantOp(IntegerAttr(d, i64)))
        one = em.add(FillOp([size], [em.empty((1,), i64)], [TensorType(i64, [1])]))
        out = em.insert_slice(one, out, [k])
    return out


@DATA_MOVEMENT.register(g.RangeOp)
def _range(op: g.RangeOp, em: Emitter) -> SSAValue:
    """start + i * delta for i below max(ceil((limit - start) / delta), 0): the length is read
    from the bounds when the kernel runs, the values computed by one generic."""
    elem = elem_of(op.result)
    assert isinstance(elem, IntegerType), f"range values are integers (verified), got {elem}"
    start, limit, delta = (em.add(tensor.ExtractOp(v, [], elem)) for v in op.operands)
    zero, one, minus_one = (em.add(arith.ConstantOp(IntegerAttr(c, elem))) for c in (0, 1, -1))
    # ceil((limit - start) / delta) as (limit - start + delta - sign(delta)) / delta, truncating
    sign = em.add(arith.SelectOp(em.add(arith.CmpiOp(delta, zero, "sgt")), one, minus_one))
    span = em.add(
        arith.SubiOp(em.add(arith.AddiOp(em.add(arith.SubiOp(limit, start)), delta)), sign)
    )
    count = em.add(arith.MaxSIOp(em.add(arith.DivSIOp(span, delta)), zero))
    init = em.add(
        tensor.EmptyOp(
            [em.add(arith.IndexCastOp(count, IndexType()))], TensorType(elem, [DYNAMIC_INDEX])
        )
    )

    def body(b: Body, a: list[SSAValue]) -> SSAValue:
        i = b.op(arith.IndexCastOp(b.index(0), elem))
        return b.add(a[0], b.mul(i, a[1]))

    return em.generic([op.start, op.delta], [[], []], init, identity(1), "p", body)


@DATA_MOVEMENT.register(g.IdentityOp, g.DropoutOp)
def _forward(op: g.UnaryOp, em: Emitter) -> SSAValue:
    """Identity and inference-mode Dropout are no-ops."""
    return op.x


@DATA_MOVEMENT.register(g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp)
def _reshape(op: g.GraphOp, em: Emitter) -> SSAValue:
    return em.reshape(op.operands[0], out_shape(op))


@DATA_MOVEMENT.register(g.TransposeOp)
def _transpose(op: g.TransposeOp, em: Emitter) -> SSAValue:
    inv = {p: j for j, p in enumerate(op.perm.get_values())}
    xmap = [dim(inv[k]) for k in range(len(shape_of(op.x)))]
    return em.map_elementwise([op.x], out_shape(op), copy, [xmap])


def _offsets(rank: int, axis: int, offset: int) -> list[int]:
    """Slice offsets that are `offset` along `axis`, 0 elsewhere."""
    offs = [0] * rank
    offs[axis] = offset
    return offs


def _read_slice(
    em: Emitter, x: SSAValue, out: tuple[int, ...], starts: Sequence[int], steps: Sequence[int]
) -> SSAValue:
    """x[start + step * i] per axis as a copying generic (a slice of a tensor with run-time
    dims, whose `?` sizes the generic reads from x: a view would need them given)."""
    rank = len(out)
    xs = shape_of(x)
    xmap = [dim(k) * st + cst(s0) for k, (s0, st) in enumerate(zip(starts, steps, strict=True))]
    if all((s0, st) != (0, 1) or out[k] == xs[k] for k, (s0, st) in enumerate(zip(starts, steps))):
        return em.map_elementwise([x], out, copy, [xmap])
    # a bare `d` would make x's extent the loop's where the slice is shorter: x is read by
    # coordinates instead, indexed where it is whole (its `?` dims among them: the sizes)
    whole = [
        (s0, st) == (0, 1) and out[k] == xs[k] for k, (s0, st) in enumerate(zip(starts, steps))
    ]
    sizes_map = [dim(k) if whole[k] else cst(0) for k in range(rank)]

    def body(b: Body, a: list[SSAValue]) -> SSAValue:
        coords = []
        for k, (s0, st) in enumerate(zip(starts, steps, strict=True)):
            i = b.index(k)
            if (s0, st) != (0, 1):
                scaled = b.op(arith.MuliOp(i, b.op(arith.ConstantOp(IntegerAttr(st, IndexType())))))
                i = b.op(arith.AddiOp(scaled, b.op(arith.ConstantOp(IntegerAttr(s0, IndexType())))))
            coords.append(i)
        return b.op(tensor.ExtractOp(x, coords, elem_of(x)))

    init = em.empty(out, elem_of(x))
    return em.generic([x], [sizes_map], init, identity(rank), "p" * rank, body)


def _run_time_concat(op: g.ConcatOp, em: Emitter, axis: int) -> SSAValue:
    """Concat of tensors with run-time dims: one generic over the result reading, at each
    position, the input that holds it. Every input is read (clamped in bounds, an empty one at
    its first element, which every buffer has) and the one holding the position selected.
    Along a run-time axis the inputs' lengths are read in the body (`tensor.dim`)."""
    out = out_shape(op)
    rank = len(out)
    inputs = list(op.inputs)

    def body(b: Body, a: list[SSAValue]) -> SSAValue:
        def index(c: int) -> SSAValue:
            return b.op(arith.ConstantOp(IntegerAttr(int(c), IndexType())))

        j = b.index(axis)
        zero = index(0)
        lo: SSAValue = zero
        result: SSAValue | None = None
        for v in inputs:
            n = shape_of(v)[axis]
            length = b.op(tensor.DimOp(v, index(axis))) if n == DYNAMIC_INDEX else index(n)
            last = b.op(arith.SubiOp(length, index(1)))
            at = b.op(arith.MaxSIOp(b.op(arith.MinSIOp(b.op(arith.SubiOp(j, lo)), last)), zero))
            coords = [at if k == axis else b.index(k) for k in range(rank)]
            if n == DYNAMIC_INDEX:  # possibly empty: then read its first element
                empty = b.op(arith.CmpiOp(length, zero, "eq"))
                coords = [b.select(empty, zero, c) for c in coords]
            value = b.op(tensor.ExtractOp(v, coords, elem_of(v)))
            if result is not None:  # before this input's slot: the earlier inputs' value
                value = b.select(b.op(arith.CmpiOp(j, lo, "slt")), result, value)
            result = value
            lo = b.op(arith.AddiOp(lo, length))
        assert result is not None
        return result

    sizes: list[SSAValue] = []
    for k, d in enumerate(out):
        if d != DYNAMIC_INDEX:
            continue
        parts = inputs if k == axis else inputs[:1]
        total: SSAValue | None = None
        for v in parts:
            n = shape_of(v)[k]
            kk = em.add(arith.ConstantOp(IntegerAttr(k, IndexType())))
            size = (
                em.add(tensor.DimOp(v, kk))
                if n == DYNAMIC_INDEX
                else em.add(arith.ConstantOp(IntegerAttr(n, IndexType())))
            )
            total = size if total is None else em.add(arith.AddiOp(total, size))
        assert total is not None
        sizes.append(total)
    init = em.add(tensor.EmptyOp(sizes, TensorType(elem_of(op.result), list(out))))
    return em.generic([], [], init, identity(rank), "p" * rank, body)


@DATA_MOVEMENT.register(g.ConcatOp)
def _concat(op: g.ConcatOp, em: Emitter) -> SSAValue:
    axis = op.axis.value.data
    rank = len(out_shape(op))
    if DYNAMIC_INDEX in out_shape(op):
        return _run_time_concat(op, em, axis)
    res = em.empty(out_shape(op), elem_of(op.result))
    off = 0
    for v in op.inputs:
        res = em.insert_slice(v, res, _offsets(rank, axis, off))
        off += shape_of(v)[axis]
    return res


@DATA_MOVEMENT.register(g.SplitOp)
def _split(op: g.SplitOp, em: Emitter) -> Sequence[SSAValue]:
    axis = op.axis.value.data
    rank = len(shape_of(op.x))
    results: list[SSAValue] = []
    off = 0
    for res in op.outputs:
        rs = shape_of(res)
        if DYNAMIC_INDEX in rs:
            results.append(_read_slice(em, op.x, rs, _offsets(rank, axis, off), [1] * rank))
        else:
            results.append(em.extract_slice(op.x, _offsets(rank, axis, off), rs, [1] * rank))
        off += rs[axis]
    return results


@DATA_MOVEMENT.register(g.SliceOp)
def _slice(op: g.SliceOp, em: Emitter) -> SSAValue:
    starts, steps = op.starts.get_values(), op.steps.get_values()
    out = out_shape(op)
    if DYNAMIC_INDEX in out:
        return _read_slice(em, op.x, out, starts, steps)
    if all(st > 0 for st in steps):
        return em.extract_slice(op.x, starts, out, steps)
    # negative steps: read x[start + step * i] (a negative map coefficient)
    xmap = [dim(i) * st + cst(s0) for i, (s0, st) in enumerate(zip(starts, steps, strict=True))]
    return em.map_elementwise([op.x], out, copy, [xmap])


@DATA_MOVEMENT.register(g.GatherOp)
def _gather(op: g.GatherOp, em: Emitter) -> SSAValue:
    data, idx = op.data, op.indices
    ds, q = shape_of(data), len(shape_of(idx))
    axis = op.axis.value.data
    out = out_shape(op)
    ity = elem_of(idx)
    assert isinstance(ity, IntegerType), f"gather indices are integers (verified), got {ity}"
    extent = ds[axis]

    def body(b: Body, a: list[SSAValue]) -> SSAValue:
        i = a[0]
        neg = b.compare("lt", i, b.const(0, i))
        i = b.select(neg, b.add(i, b.const(extent, i)), i)
        # an index out of [-extent, extent) is clamped, never read out of bounds
        i = b.min(b.max(i, b.const(0, i)), b.const(extent - 1, i))
        i = b.op(arith.IndexCastOp(i, IndexType()))
        coords = [b.index(j) for j in range(axis)] + [i]
        coords += [b.index(j - 1 + q) for j in range(axis + 1, len(ds))]
        return b.op(tensor.ExtractOp(data, coords, elem_of(data)))

    imap = [dim(axis + j) for j in range(q)]
    init = em.empty(out, elem_of(data))
    return em.generic([idx], [imap], init, identity(len(out)), "p" * len(out), body)


@DATA_MOVEMENT.register(g.PadOp)
def _pad(op: g.PadOp, em: Emitter) -> SSAValue:
    pads = op.pads.get_values()
    rank = len(shape_of(op.x))
    return em.pad(op.x, pads[:rank], pads[rank:], op.value.value.data)


@DATA_MOVEMENT.register(g.LayoutTransformOp)
def _layout_transform(op: g.LayoutTransformOp, em: Emitter) -> SSAValue:
    """NCHW -> NCHW[b]c reads x[n, cb*b + c, h, w]; NCHW[b]c -> NCHW permutes to (N, C/b, b, H, W)
    and collapses; block to block goes through NCHW."""
    x = op.x
    bs, bd = layout_block(op.src.data), layout_block(op.dst.data)
    s = shape_of(x)
    if bs:
        n, cb, h, w, b = s
        xmap = [dim(0), dim(1), dim(3), dim(4), dim(2)]
        moved = em.map_elementwise([x], (n, cb, b, h, w), copy, [xmap])
        x = em.reshape(moved, (n, cb * b, h, w))
        s = shape_of(x)
    if not bd:
        return x
    n, c, h, w = s
    xmap = [dim(0), dim(1) * bd + dim(4), dim(2), dim(3)]
    return em.map_elementwise([x], (n, c // bd, h, w, bd), copy, [xmap])
