"""`winograd`: stride-1 3x3 blocked convolutions as Winograd F(m x m, 3x3) (Lavin & Gray 2016;
TVM's conv2d_NCHWc_winograd on x86), with the filters transformed at compile time.

Why: a 3x3 conv at the FMA peak (ResNet's, on both engines) can only get faster by doing fewer
multiplications. F(m x m, 3x3) computes an m x m output tile from an (m+2)^2 input tile with
(m+2)^2 multiplications per channel pair instead of 9 m^2: 2.25x fewer for m = 2, 4x for m = 4.
The conv becomes `graph.winograd_input` (each input tile to the transform space) ->
`graph.matmul` (one (tiles x C) @ (C x K) product per transform point, the weights transformed
once here) -> `graph.winograd_output` (back to the image, plus the bias; the activation and
residual add fuse into it). The matmul is an ordinary kernel: the default schedule and the tuner
treat it as one.

What it costs: the transforms (memory passes over (m+2)^2/m^2 times the image) and weights
(m+2)^2/9 times as large, streamed once per conv. Where the image has few tiles and many
channels the transforms outweigh the products saved; see `choose_tile`. An output that is not a
whole number of tiles (13x13) is computed in whole tiles (14x14) and cut.
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
from dialects.graph_shapes import window
from dialects.winograd import KERNEL, TILES, alpha, tile_grid, transform_weights
from passes.schedule.cpu_target import CpuTarget, cpu_target
from passes.schedule.options import option_error
from passes.transforms.fold_constants import prop


def _shape(v: object) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


def _window(op: g.ConvNchwcOp) -> tuple[tuple[int, ...], ...]:
    return window(2, prop(op, "strides"), prop(op, "pads"), prop(op, "dilations"))


def eligible(op: g.ConvNchwcOp) -> bool:
    """A dense 3x3 stride-1, dilation-1 blocked conv with constant weights."""
    strides, _, dilations = _window(op)
    return (
        isinstance(op.w.owner, g.ConstantOp)
        and prop(op, "group") == 1
        and _shape(op.w)[2:4] == (KERNEL, KERNEL)
        and strides == dilations == (1, 1)
    )


def _tile_grid(op: g.ConvNchwcOp, m: int) -> tuple[int, int]:
    oh, ow = _shape(op.result)[2:4]
    return tile_grid(oh, ow, m)


TRANSFORM_COST = 4
"""What one multiply-add of the transforms costs in matmul multiply-adds. The matmul keeps its
accumulators in registers and reuses each loaded vector across its register tile (the FMA
units bound it at 250 GFLOP/s on Zen 5); a transform step loads a vector and a matrix entry
per multiply-add and streams an intermediate through memory (60-80 GFLOP/s for F(4x4), 30
for F(2x2) on Zen 5). Timings of 16..64-channel 56x56 convs there: F(2x2) loses at 32
channels and wins from 48 (as this weight predicts), F(4x4) wins from 32 (and by 1.1x at 16,
where the rule keeps the direct conv)."""


def reuse_efficiency(rows: int, cpu: CpuTarget) -> float:
    """The share of the FMA peak a product reaches when each weight it streams serves `rows`
    output rows (tiles, or a direct conv's output pixels): rows / (rows + 2 fma_in_flight).
    Few rows leave the weight stream, not the FMAs, the bound. Zen 5 (8 FMAs in flight) gives
    0.5 / 0.75 / 0.92 at 16 / 49 / 196 rows; ResNet-18's products measured 110 / 175 / 225 of
    250 GFLOP/s there."""
    return rows / (rows + 2 * cpu.fma_in_flight)


def winograd_macs(m: int, c: int, k: int, efficiency: float = 1.0) -> float:
    """Multiply-adds per output tile of F(m x m, 3x3) for c input and k output channels: the
    per-point products (at `efficiency` of the peak, see reuse_efficiency) and the transforms
    weighted by TRANSFORM_COST: the input tile's row and column passes (a^3 each per input
    channel) and the output's (m a^2 + m^2 a per output channel)."""
    a = alpha(m)
    products = a * a * c * k / efficiency
    return products + TRANSFORM_COST * (2 * a**3 * c + (m * a * a + m * m * a) * k)


def tiles_per_point(op: g.ConvNchwcOp, m: int) -> int:
    """The rows of each per-point product: output tiles over the batch."""
    th, tw = _tile_grid(op, m)
    return _shape(op.result)[0] * th * tw


def choose_tile(op: g.ConvNchwcOp, cpu: CpuTarget) -> int:
    """The default: the tile with the fewest multiply-adds per output element, if that beats the
    direct conv's 9 c k (0: keep the direct conv). Each side's products are weighted by
    `reuse_efficiency` (a Winograd product has a row per tile, the direct conv one per output
    pixel: F(4x4) on a 14x14 image has 16, F(2x2) 49) and the transforms by TRANSFORM_COST;
    the cut tiles of an output that is not a whole number of them count in full. Few channels
    leave the transforms the larger part (F(4x4) pays from about 32 channels), few tiles the
    weight stream (a 4x4 image stays direct)."""
    n, kb, oh, ow, bo = _shape(op.result)
    c, k = _shape(op.x)[1] * _shape(op.x)[4], kb * bo
    best, best_cost = 0, KERNEL * KERNEL * c * k / reuse_efficiency(n * oh * ow, cpu)
    for m in TILES:
        th, tw = _tile_grid(op, m)
        efficiency = reuse_efficiency(tiles_per_point(op, m), cpu)
        cost = winograd_macs(m, c, k, efficiency) * th * tw / (oh * ow)
        if cost < best_cost:
            best, best_cost = m, cost
    return best


class ConvToWinograd(RewritePattern):
    """conv_nchwc (eligible) -> winograd_input, matmul with the transformed weights,
    winograd_output."""

    def __init__(self, tile: int, cpu: CpuTarget):
        self.tile = tile
        self.cpu = cpu

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConvNchwcOp, rewriter: PatternRewriter) -> None:
        if not eligible(op):
            return
        m = self.tile if self.tile else choose_tile(op, self.cpu)
        if not m:
            return
        assert isinstance(op.w.owner, g.ConstantOp)
        w = g.constant_value(op.w.owner)
        kb, cb, kh, kw, bi, bo = w.shape
        # blocked (K/bo, C/bi, 3, 3, bi, bo) -> (K, C, 3, 3)
        dense = w.transpose(0, 5, 1, 4, 2, 3).reshape(kb * bo, cb * bi, kh, kw)
        u = g.ConstantOp(transform_weights(np.asarray(dense), m))
        image = list(_shape(op.result)[2:4])
        # pad the bottom and right further so that the input holds whole tiles
        top, left, bottom, right = _window(op)[1]
        th, tw = _tile_grid(op, m)
        pads = [top, left, bottom + th * m - image[0], right + tw * m - image[1]]
        x = g.WinogradInputOp(op.x, tile=m, pads=pads)
        prod = g.MatmulOp(x, u)
        y = g.WinogradOutputOp(prod, op.bias, tile=m, image=image, block=bo)
        for new in (x, prod, y):
            new.results[0].name_hint = op.result.name_hint
        u.result.name_hint = f"{op.w.name_hint}_wino" if op.w.name_hint else None
        weights = op.w.owner
        rewriter.replace(op, [u, x, prod, y], [y.result])
        if not weights.result.uses:
            rewriter.erase_op(weights)


@dataclass(frozen=True)
class WinogradPass(ModulePass):
    """Blocked stride-1 3x3 convs as Winograd F(m x m, 3x3). `tile` = 0: `choose_tile` per
    conv; 2 or 4: every eligible conv with that tile; -1: none (the pass does nothing)."""

    name = "winograd"
    tile: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.tile not in (-1, 0, *TILES):
            raise option_error(
                self.name,
                "tile",
                self.tile,
                f"-1 (none), 0 (chosen per conv) or {' or '.join(map(str, TILES))}",
            )
        if self.tile < 0:
            return
        PatternRewriteWalker(
            ConvToWinograd(self.tile, cpu_target()), apply_recursively=False
        ).rewrite_module(op)
