"""Constants and data movement: reshapes, transpose, concat, split, slice, gather, pad, layout
transforms (tensor slices and reshapes, or a copying linalg.generic whose map does the moving),
and the ops that forward their operand (Identity, inference-mode Dropout)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import IndexType, IntegerType
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
    return em.dense(np.array(shape_of(op.x), dtype=np.int64))


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


@DATA_MOVEMENT.register(g.ConcatOp)
def _concat(op: g.ConcatOp, em: Emitter) -> SSAValue:
    axis = op.axis.value.data
    rank = len(out_shape(op))
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
        results.append(em.extract_slice(op.x, _offsets(rank, axis, off), rs, [1] * rank))
        off += rs[axis]
    return results


@DATA_MOVEMENT.register(g.SliceOp)
def _slice(op: g.SliceOp, em: Emitter) -> SSAValue:
    starts, steps = op.starts.get_values(), op.steps.get_values()
    out = out_shape(op)
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
