"""`blocked-layout`: 2-D convolutions in the blocked layout NCHW[b]c (AutoTVM's x86 approach),
with the layout transforms placed around them and folded across the model.

Why: in NCHW a conv's vector lanes run along the image row, and a 7- or 14-wide row fills 7 or
14 of 16 lanes (the mobile nets' late layers), while a depthwise conv's rows share no vector
operand. In NCHW[b]c a block of b channels is the innermost dim of input, weights and result:
the lanes are output channels at every image size, and the input element is a broadcast.

Each conv with constant weights whose channel counts have a block (see `channel_block`:
dense, depthwise, and grouped ones whose groups hold whole blocks) becomes `layout_transform -> conv_nchwc -> layout_transform`, its weights
stored blocked at compile time. The transforms back to NCHW then sink through the ops that do
not care about the layout (elementwise ops, broadcasts against per-channel constants or other
blocked tensors, pooling, channel concatenation), and a transform that meets its inverse
cancels; what is left converts at the edges (the model's inputs and outputs, a reshape, a pool).
The block of a tensor depends only on its channel count, so producer and consumer always agree.
"""

from __future__ import annotations

import math
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
from dialects.graph_shapes import layout_block, layout_name, window
from dialects.sched import MAX_WIDTH
from passes.schedule.cpu_target import CpuTarget, cpu_target
from passes.schedule.options import check_power_of_two
from passes.transforms.fold_constants import prop

MIN_BLOCK = 4
"""A smaller block than this (a channel count with no factor 4) leaves the conv in NCHW."""


def channel_block(channels: int, width: int) -> int:
    """The block of a tensor with `channels` channels for `width` f32 lanes: the largest power
    of two up to `width` (at least MIN_BLOCK) that divides it, or all of them when fewer than
    `width` (a 3-channel image); 0 when none."""
    b = width
    while b >= MIN_BLOCK:
        if channels % b == 0:
            return b
        b //= 2
    return channels if channels < width else 0


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


def _to_nchw_source(v: SSAValue) -> tuple[SSAValue, str] | None:
    """(x, "NCHW[b]c") when v = layout_transform(x, NCHW[b]c -> NCHW)."""
    op = v.owner
    if isinstance(op, g.LayoutTransformOp) and prop(op, "dst") == "NCHW":
        return op.x, prop(op, "src")
    return None


BLOCKED_SUFFIX = "_blk"
"""Name hint suffix of the blocked twin of a value (what `--emit graph` shows)."""


def _named(op: Operation, like: SSAValue, suffix: str = BLOCKED_SUFFIX) -> Operation:
    op.results[0].name_hint = f"{like.name_hint}{suffix}" if like.name_hint else None
    return op


def _transform(x: SSAValue | Operation, src: str, dst: str) -> g.LayoutTransformOp:
    return g.LayoutTransformOp(x, src=src, dst=dst)


def _back(op: Operation, layout: str, old: SSAValue) -> g.LayoutTransformOp:
    """The transform of `op`'s result back to NCHW, named as the value it replaces."""
    back = _transform(op, layout, "NCHW")
    back.results[0].name_hint = old.name_hint
    return back


def block_constant(a: np.ndarray, rank: int, block: int) -> np.ndarray | None:
    """A constant that broadcasts against an NCHW tensor of `rank` 4, stored so that it
    broadcasts the same way against its NCHW[block]c form; None when its channel dim is
    neither 1 nor a multiple of the block."""
    if a.ndim > rank:
        return None
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    n, c, h, w = a.shape
    if c == 1:
        return a.reshape(n, 1, h, w, 1)
    if c % block:
        return None
    return np.ascontiguousarray(a.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


class ConvToNchwc(RewritePattern):
    """conv (constant weights, 4-D; dense, depthwise, or grouped with whole blocks per group)
    -> to-blocked, conv_nchwc, to-NCHW."""

    def __init__(self, width: int):
        self.width = width

    def block(self, channels: int) -> int:
        return channel_block(channels, self.width)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConvOp, rewriter: PatternRewriter) -> None:
        xs, ws = _shape(op.x), _shape(op.w)
        if len(xs) != 4 or not isinstance(op.w.owner, g.ConstantOp):
            return
        c, m, group = xs[1], ws[0], prop(op, "group")
        bi, bo = self.block(c), self.block(m)
        depthwise = group > 1 and group == c == m
        if not bi or not bo or not depthwise and ((c // group) % bi or (m // group) % bo):
            return
        w = g.constant_value(op.w.owner)
        kh, kw = ws[2], ws[3]
        if not depthwise:  # (M, C/G, KH, KW) -> (M/bo, C/G/bi, KH, KW, bi, bo)
            cg = c // group
            wb = w.reshape(m // bo, bo, cg // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)
        else:  # depthwise: (C, 1, KH, KW) -> (C/b, 1, KH, KW, 1, b)
            wb = w.reshape(m // bo, bo, kh, kw).transpose(0, 2, 3, 1)
            wb = wb.reshape(m // bo, 1, kh, kw, 1, bo)
        weight = _named(g.ConstantOp(np.ascontiguousarray(wb)), op.w)
        x = _named(_transform(op.x, "NCHW", layout_name(bi)), op.x)
        props = {k: op.properties[k] for k in ("strides", "pads", "dilations", "group")}
        conv = _named(g.ConvNchwcOp(x, weight, op.bias, **props), op.result)
        back = _back(conv, layout_name(bo), op.result)
        rewriter.replace_op(op, [weight, x, conv, back], [back.results[0]])


class CancelTransforms(RewritePattern):
    """transform(transform(x, A -> B), B -> C) -> x when A = C, else transform(x, A -> C)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.LayoutTransformOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if not isinstance(inner, g.LayoutTransformOp):
            return
        src, dst = prop(inner, "src"), prop(op, "dst")
        if src == dst:
            rewriter.replace_op(op, [], [inner.x])
        else:
            rewriter.replace_op(op, _transform(inner.x, src, dst))


def _is_elementwise(op: Operation) -> bool:
    return g.pattern_kind(op) in (g.PatternKind.ELEMENTWISE, g.PatternKind.BROADCAST)


class SinkThroughElementwise(RewritePattern):
    """u(to-NCHW(x)) -> to-NCHW(u(x)) for an elementwise op u, and likewise for a binary op
    whose other operand is blocked the same way, a per-channel (or scalar) constant, or a 4-D
    value with the same channels (which gets a transform of its own: a broadcast scale)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not _is_elementwise(op) or not isinstance(op, g.UnaryOp | g.BinaryOp):
            return
        sources = [_to_nchw_source(v) for v in op.operands]
        layouts = {s[1] for s in sources if s is not None}
        if len(layouts) != 1 or len(_shape(op.results[0])) != 4:
            return
        layout = layouts.pop()
        block = layout_block(layout)
        channels = _shape(op.results[0])[1]
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for v, src in zip(op.operands, sources, strict=True):
            if src is not None:
                operands.append(src[0])
                continue
            if isinstance(v.owner, g.ConstantOp):
                blocked = block_constant(g.constant_value(v.owner), 4, block)
                if blocked is None:
                    return
                new_ops.append(_named(g.ConstantOp(blocked), v))
            elif len(_shape(v)) == 4 and _shape(v)[1] == channels:
                new_ops.append(_named(_transform(v, "NCHW", layout), v))
            else:
                return
            operands.append(new_ops[-1].results[0])
        inner = _named(type(op)(*operands, **op.properties), op.results[0])
        back = _back(inner, layout, op.results[0])
        rewriter.replace_op(op, [*new_ops, inner, back], [back.results[0]])


class SinkThroughGlobalPool(RewritePattern):
    """global_{avg,max}_pool(to-NCHW(x)) and reduce_{mean,max,sum}(to-NCHW(x)) over the image
    (axes [2, 3], dims kept: a squeeze-and-excitation's pooling as exporters write it) ->
    to-NCHW(reduce(x, axes = [2, 3]))."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        reduce = _IMAGE_REDUCTIONS.get(type(op))
        src = _to_nchw_source(op.operands[0]) if reduce else None
        if reduce is None or src is None or len(_shape(op.operands[0])) != 4:
            return
        if isinstance(op, g.ReduceOp) and (
            tuple(prop(op, "axes")) not in ((2, 3), (-2, -1)) or not prop(op, "keepdims")
        ):
            return
        inner = _named(reduce(src[0], axes=[2, 3], keepdims=1), op.results[0])
        back = _back(inner, src[1], op.results[0])
        rewriter.replace_op(op, [inner, back], [back.results[0]])


_IMAGE_REDUCTIONS: dict[type[Operation], type[g.ReduceOp]] = {
    g.GlobalAvgPoolOp: g.ReduceMeanOp,
    g.GlobalMaxPoolOp: g.ReduceMaxOp,
    g.ReduceMeanOp: g.ReduceMeanOp,
    g.ReduceMaxOp: g.ReduceMaxOp,
    g.ReduceSumOp: g.ReduceSumOp,
}


_WINDOW = ("kernel", "strides", "pads", "dilations")


class SinkThroughPool(RewritePattern):
    """{max,avg}_pool(to-NCHW(x)) -> to-NCHW(pool(x)): the same op over the blocked tensor's
    (H, W, b) with a window of 1 along b (pools are N-D in the graph dialect)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.MaxPoolOp | g.AvgPoolOp):
            return
        src = _to_nchw_source(op.x)
        if src is None or len(_shape(op.x)) != 4:
            return
        strides, pads, dils = window(
            2, prop(op, "strides"), prop(op, "pads"), prop(op, "dilations")
        )
        props = {k: v for k, v in op.properties.items() if k not in _WINDOW}
        inner = type(op)(
            src[0],
            **props,
            kernel=[*prop(op, "kernel"), 1],
            strides=[*strides, 1],
            pads=[*pads[:2], 0, *pads[2:], 0],
            dilations=[*dils, 1],
        )
        back = _back(_named(inner, op.result), src[1], op.result)
        rewriter.replace_op(op, [inner, back], [back.results[0]])


class SinkThroughConcat(RewritePattern):
    """concat(to-NCHW(x_i), axis = 1) -> to-NCHW(concat(x_i, axis = 1)), one layout for all."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConcatOp, rewriter: PatternRewriter) -> None:
        sources = [_to_nchw_source(v) for v in op.operands]
        if prop(op, "axis") != 1 or any(s is None for s in sources):
            return
        layouts = {s[1] for s in sources if s is not None}
        if len(layouts) != 1 or len(_shape(op.results[0])) != 4:
            return
        inner = _named(g.ConcatOp([s[0] for s in sources if s is not None], axis=1), op.result)
        back = _back(inner, layouts.pop(), op.result)
        rewriter.replace_op(op, [inner, back], [back.results[0]])


def merge_duplicate_transforms(module: ModuleOp) -> None:
    """One transform per (value, layout) in a block: convs that read one tensor (a ResNet
    block's input, read by two branches) share its blocked form."""
    seen: dict[tuple[SSAValue, str, str, Block | None], g.LayoutTransformOp] = {}
    for op in list(module.walk()):
        if not isinstance(op, g.LayoutTransformOp):
            continue
        key = (op.x, prop(op, "src"), prop(op, "dst"), op.parent_block())
        first = seen.setdefault(key, op)
        if first is not op:
            op.results[0].replace_all_uses_with(first.results[0])
            op.detach()
            op.erase()


MIN_FULL_SHARE = 0.5
"""The default (`block` = 0) keeps a model in NCHW unless at least this share of its conv work
(multiply-adds) runs blocked in whole vectors: a block narrower than the vector (104 channels:
8 of 16 lanes) fills part of each FMA, and a conv left in NCHW between blocked ones (a grouped
conv whose groups split a block) converts back and forth. On Zen 5 such models (RegNetY-400MF:
64% of the work in 8-channel blocks; ShuffleNet-v1: 87% left in NCHW) ran 1.45x and 1.4x slower
blocked; the mobile nets that gain have at most 40% of their work in narrow blocks."""

MAX_TRANSFORM_SHARE = 1.0
"""...and unless its layout transforms (the edges' included) cost no more than its convs
(`transform_cost_share`): a lone depthwise conv would spend more time entering and leaving the
blocked layout than it saves (7x its work on Zen 5: 0.31 ms blocked vs 0.14 ms NCHW), while the
real-model set's transforms cost 0.1-60% of their convs."""


def _conv_work(op: Operation) -> int:
    w = _shape(op.operands[1])
    return math.prod(_shape(op.results[0])) * math.prod(w[1:5] if len(w) == 6 else w[1:])


def full_width_share(module: ModuleOp, width: int) -> float:
    """The share of the convs' multiply-adds that run blocked with whole vectors of output
    channels, reading whole vectors of input channels (or broadcasts: depthwise, or an input
    with fewer channels than the vector in one block); 1.0 without convs."""
    full = total = 0
    for op in module.walk():
        if isinstance(op, g.ConvOp):
            total += _conv_work(op)
        elif isinstance(op, g.ConvNchwcOp):
            work = _conv_work(op)
            total += work
            wi, bo = _shape(op.w)[4], _shape(op.w)[5]
            if bo == width and (wi in (1, width) or _shape(op.x)[1] == 1):
                full += work
    return full / total if total else 1.0


def transform_cost_share(module: ModuleOp, cpu: CpuTarget) -> float:
    """The layout transforms' cost over the convs', estimated in cycles: a transform moves about
    one element per cycle (a strided, scalar copy), a conv runs its multiply-adds at the FMA
    peak (`cpu.macs_per_cycle`); 0.0 without convs."""
    moved = work = 0
    for op in module.walk():
        if isinstance(op, g.ConvOp | g.ConvNchwcOp):
            work += _conv_work(op)
        elif isinstance(op, g.LayoutTransformOp):
            moved += math.prod(_shape(op.results[0]))
    return moved * cpu.macs_per_cycle / work if work else 0.0


def block_layout(module: ModuleOp, width: int) -> None:
    """The rewrite: convs blocked, then the transforms sunk, cancelled and merged."""
    PatternRewriteWalker(ConvToNchwc(width), apply_recursively=False).rewrite_module(module)
    merge_duplicate_transforms(module)
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [
                CancelTransforms(),
                SinkThroughElementwise(),
                SinkThroughGlobalPool(),
                SinkThroughPool(),
                SinkThroughConcat(),
            ]
        )
    ).rewrite_module(module)
    merge_duplicate_transforms(module)


@dataclass(frozen=True)
class BlockedLayoutPass(ModulePass):
    """Blocked convolutions. `block` = 0: the CPU's f32 vector width, and only where enough of
    the conv work then fills whole vectors and the transforms cost less than the convs
    (MIN_FULL_SHARE, MAX_TRANSFORM_SHARE); a given block (a power of two, MIN_BLOCK..MAX_WIDTH)
    always applies."""

    name = "blocked-layout"
    block: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_power_of_two(
            self.name, "block", self.block, MIN_BLOCK, MAX_WIDTH, "0 (the CPU's vector width)"
        )
        if self.block:
            block_layout(op, self.block)
            return
        cpu = cpu_target()
        trial = op.clone()
        block_layout(trial, cpu.width)
        if (
            full_width_share(trial, cpu.width) >= MIN_FULL_SHARE
            and transform_cost_share(trial, cpu) <= MAX_TRANSFORM_SHARE
        ):  # keep the rewritten body rather than rewriting the module a second time
            op.body.detach_block(op.body.block)
            op.body.add_block(trial.body.detach_block(trial.body.block))
