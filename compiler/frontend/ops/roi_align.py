"""RoiAlign (opsets 10, 16, 22), composed of graph ops.

Each output bin of a region of interest averages (mode avg) or maxes (mode max) the bilinear
samples of a regular grid of points inside it. Everything here follows onnx's reference
implementation (onnx/reference/ops/op_roi_align.py), which the node tests were generated with
and onnxruntime agrees with: float32 arithmetic in the same order; a sample outside
[-1, size] on either axis contributes 0; a coordinate below 0 is moved to 0 and one at or past
size - 1 to size - 1 (its upper tap then has weight 0); max mode takes the maximum of the four
*weighted* bilinear terms of every sample (not the maximum of interpolated values); a bin
without samples is 0.

The samples of one bin are separable (rows x columns) and so are their weights, which gives two
compositions:

- A fixed sampling_ratio n: every bin has n x n samples, so the taps (4 per sample) are one
  graph.gather of the input's rows of channels at run-time flat indices, weighted and reduced
  (summed / n^2, or maxed), as GridSample does.
- sampling_ratio 0 (adaptive): a bin has ceil(bin size) samples per axis, a number known only at
  run time and with no static bound (rois may be any size, also far beyond the image). Instead
  of sampling up to a bound, the result is computed exactly per input pixel: along one axis,
  a pixel is reached only by the taps of samples within a short span around it, and adaptive
  samples are more than 0.5 apart, so a few samples (CANDIDATES, found by arithmetic on their
  run-time index) are all that can touch it. That gives per roi and bin a weight for every pixel of the axis:
  their sum (avg: the result is Ay @ X @ Ax^T / count, two batched matmuls) or their maximum
  and minimum (max: max over pixels of X times the max weights where X >= 0, the min weights
  where X < 0, in two reductions, plus 0 where some sample of the bin lies outside). This is
  exact for every roi; its cost grows with the input's spatial size (H x W per output value)
  rather than with the number of samples.

Batch indices are clamped into [0, N) so that every read stays inside the input (the reference
would fail on such an index).
"""

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
    text,
)
from dialects import graph as g

CANDIDATES = 9
"""Adaptive sampling: the samples examined per pixel and axis, from the first one at or after
the pixel's lowest reaching position (pixel - 1; -1 for pixels 0 and 1, as a sample in [-1, 0)
is moved to 0 and its upper tap, of weight 0, reaches pixel 1). Those reaching it lie within a
span of 2 (3 for pixel 1) and adaptive samples are more than 0.5 apart when there are several:
at most 6 candidates; one more on each side absorbs rounding, and one for the floor."""

MAX_INDEX = float(2**24)
"""Sample indices are computed in float32, exact up to 2^24; a candidate index is clamped to
it (a roi with more samples per bin than this is beyond float32's resolution anyway)."""


def _check_size(imp: Importer, shape: list[int], what: str) -> None:
    total = math.prod(shape)
    imp.check_composed(total, f"{what} needs an intermediate of {total} elements (shape {shape})")


@converter("RoiAlign")
def convert_roi_align(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    mode = text(a.get("mode", "avg"))
    if mode not in ("avg", "max"):
        raise imp.error(f"mode must be avg or max, got '{mode}'")
    # before opset 16 there is no such attribute and the behaviour is output_half_pixel (the
    # schema check refuses the attribute there); from opset 16 the default is half_pixel
    default = "half_pixel" if imp.opset >= 16 else "output_half_pixel"
    ctm = text(a.get("coordinate_transformation_mode", default))
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise imp.error(
            f"coordinate_transformation_mode must be half_pixel or output_half_pixel, got '{ctm}'"
        )
    half_pixel = ctm == "half_pixel"
    oh, ow = int(a.get("output_height", 1)), int(a.get("output_width", 1))
    if oh < 1 or ow < 1:
        raise imp.error(f"output_height and output_width must be >= 1, got {oh} and {ow}")
    ratio = int(a.get("sampling_ratio", 0))
    if ratio < 0:
        raise imp.error(f"sampling_ratio must be >= 0 (0: adaptive), got {ratio}")
    scale = float(a.get("spatial_scale", 1.0))
    if not math.isfinite(scale):
        raise imp.error(f"spatial_scale must be finite, got {scale}")

    x, rois, bi = (imp.value(node.input[i]) for i in range(3))
    xs, rs, bs = imp.shape_of(x), imp.shape_of(rois), imp.shape_of(bi)
    if len(xs) != 4:
        raise imp.error(f"X must be 4-D (N, C, H, W), got shape {list(xs)}")
    if element_type_of(x) != f32:
        raise imp.error(f"X must be float32, got {element_type_of(x)}")
    if len(rs) != 2 or rs[1] != 4:
        raise imp.error(f"rois must have shape [num_rois, 4], got {list(rs)}")
    if element_type_of(rois) != f32:
        raise imp.error(f"rois must be float32, got {element_type_of(rois)}")
    if bs != rs[:1]:
        raise imp.error(f"batch_indices must have shape [{rs[0]}] (one per roi), got {list(bs)}")
    if element_type_of(bi) not in (i64, i32):
        raise imp.error(f"batch_indices must be int64, got {element_type_of(bi)}")
    n, c, h, w = xs
    r = rs[0]
    if r == 0 or c == 0:  # nothing to compute
        return [np.zeros((r, c, oh, ow), np.float32)]
    if n == 0 or h == 0 or w == 0:
        raise imp.error(f"X must not be empty when there are rois, got shape {list(xs)}")

    if element_type_of(bi) != i64:
        bi = imp.op(g.CastOp(bi, to="i64"))
    bi = imp.op(g.MaxOp(bi, imp.constant(np.int64(0))))
    bi = imp.op(g.MinOp(bi, imp.constant(np.int64(n - 1))))

    # roi corners in feature-map coordinates, (R, 1) each: x1, y1, x2, y2
    offset = 0.5 if half_pixel else 0.0
    scaled = imp.op(g.MulOp(rois, imp.scalar(scale)))
    scaled = imp.op(g.SubOp(scaled, imp.scalar(offset)))
    x1, y1, x2, y2 = imp.emit(g.SplitOp(scaled, axis=1, sizes=[1, 1, 1, 1])).results
    axes = []
    for lo, hi, pooled in ((y1, y2, oh), (x1, x2, ow)):
        size = imp.op(g.SubOp(hi, lo))
        if not half_pixel:  # malformed rois become 1 x 1
            size = imp.op(g.MaxOp(size, imp.scalar(1.0)))
        bin_size = imp.op(g.DivOp(size, imp.scalar(float(pooled))))
        index = imp.constant(np.arange(pooled, dtype=np.float32).reshape(1, pooled))
        bin_start = imp.op(g.AddOp(lo, imp.op(g.MulOp(index, bin_size))))  # (R, pooled)
        axes.append((bin_start, bin_size))

    if ratio > 0:
        return [_fixed(imp, x, bi, axes, ratio, mode)]
    return [_adaptive(imp, x, bi, axes, mode)]


def _clamped_taps(
    imp: Importer, pos: SSAValue, length: int
) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """The reference's treatment of a sample coordinate: whether it is inside [-1, length], and
    its lower tap, upper tap (float, integral) and the upper tap's weight, after moving it to
    0 from below and to length - 1 from above (where the upper tap coincides, weight 0)."""
    inside = imp.op(
        g.AndOp(
            imp.op(g.GreaterEqualOp(pos, imp.scalar(-1.0))),
            imp.op(g.LessEqualOp(pos, imp.scalar(float(length)))),
        )
    )
    p = imp.op(g.ClipOp(pos, min=0.0, max=length - 1.0))
    low = imp.op(g.FloorOp(p))
    frac = imp.op(g.SubOp(p, low))
    high = imp.op(g.MinOp(imp.op(g.AddOp(low, imp.scalar(1.0))), imp.scalar(length - 1.0)))
    return inside, low, high, frac


# ----------------------------------------------------------------------------- fixed ratio


def _fixed(
    imp: Importer,
    x: SSAValue,
    bi: SSAValue,
    axes: list[tuple[SSAValue, SSAValue]],
    ratio: int,
    mode: str,
) -> SSAValue:
    """ratio x ratio samples per bin: one gather of (R, oh, ow, ratio, 2, ratio, 2) taps."""
    n, c, h, w = imp.shape_of(x)
    r = imp.shape_of(bi)[0]
    oh, ow = (imp.shape_of(start)[1] for start, _ in axes)
    tap_shape = [r, oh, ow, ratio, 2, ratio, 2]
    _check_size(imp, [*tap_shape, c], "RoiAlign's samples")

    # per axis, taps along (R, pooled, ratio, 2): flat index part (i64) and weight
    steps = imp.constant((np.arange(ratio, dtype=np.float32) + 0.5).reshape(1, 1, ratio))
    taps = []
    for (start, bin_size), length in zip(axes, (h, w), strict=True):
        pooled = imp.shape_of(start)[1]
        start = imp.op(g.ReshapeOp(start, [r, pooled, 1]))
        bin3 = imp.op(g.ReshapeOp(bin_size, [r, 1, 1]))
        offs = imp.op(g.DivOp(imp.op(g.MulOp(steps, bin3)), imp.scalar(float(ratio))))
        pos = imp.op(g.AddOp(start, offs))  # (R, pooled, ratio)
        inside, low, high, frac = _clamped_taps(imp, pos, length)
        shape4 = [r, pooled, ratio, 1]
        low, high = imp.op(g.ReshapeOp(low, shape4)), imp.op(g.ReshapeOp(high, shape4))
        frac = imp.op(g.ReshapeOp(frac, shape4))
        idx = imp.op(g.ConcatOp([low, high], axis=3))
        # [1 - frac, frac], zero outside
        weight = imp.op(
            g.AddOp(
                imp.constant(np.asarray([1.0, 0.0], np.float32)),
                imp.op(g.MulOp(imp.constant(np.asarray([-1.0, 1.0], np.float32)), frac)),
            )
        )
        weight = imp.op(g.WhereOp(imp.op(g.ReshapeOp(inside, shape4)), weight, imp.scalar(0.0)))
        taps.append((imp.op(g.CastOp(idx, to="i64")), weight))
    (iy, wy), (ix, wx) = taps
    y_shape, x_shape = [r, oh, 1, ratio, 2, 1, 1], [r, 1, ow, 1, 1, ratio, 2]
    iy = imp.op(g.MulOp(imp.op(g.ReshapeOp(iy, y_shape)), imp.constant(np.int64(w))))
    ix = imp.op(g.ReshapeOp(ix, x_shape))
    base = imp.op(
        g.MulOp(imp.op(g.ReshapeOp(bi, [r, 1, 1, 1, 1, 1, 1])), imp.constant(np.int64(h * w)))
    )
    flat = imp.op(g.AddOp(imp.op(g.AddOp(base, iy)), ix))
    weight = imp.op(g.MulOp(imp.op(g.ReshapeOp(wy, y_shape)), imp.op(g.ReshapeOp(wx, x_shape))))

    rows = imp.op(g.ReshapeOp(x, [n, c, h * w]))
    rows = imp.op(g.ReshapeOp(imp.op(g.TransposeOp(rows, perm=[0, 2, 1])), [n * h * w, c]))
    picked = imp.op(g.GatherOp(rows, flat, axis=0))  # (*tap_shape, C)
    terms = imp.op(g.MulOp(picked, imp.op(g.ReshapeOp(weight, [*tap_shape, 1]))))
    if mode == "avg":
        total = imp.op(g.ReduceSumOp(terms, axes=[3, 4, 5, 6], keepdims=0))
        total = imp.op(g.DivOp(total, imp.scalar(float(ratio * ratio))))
    else:
        total = imp.op(g.ReduceMaxOp(terms, axes=[3, 4, 5, 6], keepdims=0))
    return imp.op(g.TransposeOp(total, perm=[0, 3, 1, 2]))


# ----------------------------------------------------------------------------- adaptive


def _pixel_weights(
    imp: Importer, start: SSAValue, bin_size: SSAValue, length: int, mode: str
) -> tuple[SSAValue, list[SSAValue]]:
    """One axis of adaptive sampling: the run-time sample count per bin ceil(bin size), (R, 1),
    and per roi, bin and pixel (R, pooled, length) what the bin's samples put on the pixel:
    avg: [the sum of their tap weights]; max: [the largest, the smallest tap weight (-1 and 2
    where no tap reaches the pixel), and per bin (R, pooled) whether a sample lies outside]."""
    r, pooled = imp.shape_of(start)
    _check_size(imp, [r, pooled, length, CANDIDATES], "RoiAlign's adaptive sampling")
    count = imp.op(g.CeilOp(bin_size))
    some = imp.op(g.GreaterEqualOp(count, imp.scalar(1.0)))
    safe = imp.op(g.MaxOp(count, imp.scalar(1.0)))
    # sample spacing, positive wherever a sample exists (then bin_size > 0)
    spacing = imp.op(g.WhereOp(some, imp.op(g.DivOp(bin_size, safe)), imp.scalar(1.0)))
    start4 = imp.op(g.ReshapeOp(start, [r, pooled, 1, 1]))
    bin4, safe4, count4, spacing4 = (
        imp.op(g.ReshapeOp(v, [r, 1, 1, 1])) for v in (bin_size, safe, count, spacing)
    )
    pixel = np.arange(length, dtype=np.float32).reshape(1, 1, length, 1)
    reach = pixel - 1.0  # the lowest sample position whose taps reach the pixel
    reach[:, :, 1:2] = -1.0  # pixel 1: the upper tap of a sample in [-1, 0), moved to 0
    # the first sample index that may reach the pixel, less a margin
    first = imp.op(g.DivOp(imp.op(g.SubOp(imp.constant(reach), start4)), spacing4))
    first = imp.op(g.FloorOp(imp.op(g.SubOp(first, imp.scalar(0.5)))))
    first = imp.op(g.ClipOp(imp.op(g.SubOp(first, imp.scalar(1.0))), min=0.0, max=MAX_INDEX))
    k = imp.op(g.AddOp(first, imp.constant(np.arange(CANDIDATES, dtype=np.float32))))
    steps = imp.op(g.MulOp(imp.op(g.AddOp(k, imp.scalar(0.5))), bin4))
    pos = imp.op(g.AddOp(start4, imp.op(g.DivOp(steps, safe4))))  # (R, pooled, length, K)
    inside, low, high, frac = _clamped_taps(imp, pos, length)
    valid = imp.op(g.AndOp(inside, imp.op(g.LessOp(k, count4))))
    at = imp.constant(pixel)
    at_low, at_high = imp.op(g.EqualOp(low, at)), imp.op(g.EqualOp(high, at))
    w_low = imp.op(g.SubOp(imp.scalar(1.0), frac))
    if mode == "avg":
        weight = imp.op(
            g.AddOp(
                imp.op(g.WhereOp(at_low, w_low, imp.scalar(0.0))),
                imp.op(g.WhereOp(at_high, frac, imp.scalar(0.0))),
            )
        )
        weight = imp.op(g.WhereOp(valid, weight, imp.scalar(0.0)))
        return count, [imp.op(g.ReduceSumOp(weight, axes=[3], keepdims=0))]

    def extreme(op: type[g.MaxOp] | type[g.MinOp], none: float) -> SSAValue:
        e = imp.op(
            op(
                imp.op(g.WhereOp(at_low, w_low, imp.scalar(none))),
                imp.op(g.WhereOp(at_high, frac, imp.scalar(none))),
            )
        )
        return imp.op(g.WhereOp(valid, e, imp.scalar(none)))

    largest = imp.op(g.ReduceMaxOp(extreme(g.MaxOp, -1.0), axes=[3], keepdims=0))
    smallest = imp.op(g.NegOp(extreme(g.MinOp, 2.0)))
    smallest = imp.op(g.NegOp(imp.op(g.ReduceMaxOp(smallest, axes=[3], keepdims=0))))
    # the bin's first and last samples (positions grow with the index): is one outside?
    first_pos = imp.op(g.DivOp(imp.op(g.MulOp(bin_size, imp.scalar(0.5))), safe))
    first_pos = imp.op(g.AddOp(start, first_pos))
    last_pos = imp.op(g.MulOp(imp.op(g.SubOp(safe, imp.scalar(0.5))), bin_size))
    last_pos = imp.op(g.AddOp(start, imp.op(g.DivOp(last_pos, safe))))
    outside = imp.op(
        g.OrOp(
            imp.op(g.LessOp(first_pos, imp.scalar(-1.0))),
            imp.op(g.GreaterOp(last_pos, imp.scalar(float(length)))),
        )
    )
    return count, [largest, smallest, outside]


def _adaptive(
    imp: Importer,
    x: SSAValue,
    bi: SSAValue,
    axes: list[tuple[SSAValue, SSAValue]],
    mode: str,
) -> SSAValue:
    """ceil(bin size) samples per axis and bin, as per-pixel weights (see the module doc)."""
    n, c, h, w = imp.shape_of(x)
    r = imp.shape_of(bi)[0]
    oh, ow = (imp.shape_of(start)[1] for start, _ in axes)
    (cy, wy), (cx, wx) = (
        _pixel_weights(imp, start, bin_size, length, mode)
        for (start, bin_size), length in zip(axes, (h, w), strict=True)
    )
    rb = 1 if n == 1 else r
    if n == 1:  # every roi reads the one image
        xb = x
    else:
        _check_size(imp, [r, c, h, w], "RoiAlign's per-roi images")
        xb = imp.op(g.GatherOp(x, bi, axis=0))  # (R, C, H, W)
    if mode == "avg":
        ay = imp.op(g.ReshapeOp(wy[0], [r, 1, oh, h]))
        ax = imp.op(g.ReshapeOp(imp.op(g.TransposeOp(wx[0], perm=[0, 2, 1])), [r, 1, w, ow]))
        out = imp.op(g.MatmulOp(imp.op(g.MatmulOp(ay, xb)), ax))  # (R, C, oh, ow)
        count = imp.op(g.MaxOp(imp.op(g.MulOp(cy, cx)), imp.scalar(1.0)))
        return imp.op(g.DivOp(out, imp.op(g.ReshapeOp(count, [r, 1, 1, 1]))))

    _check_size(imp, [r, c, h, ow, w], "RoiAlign's max over columns")
    _check_size(imp, [r, c, oh, h, ow], "RoiAlign's max over rows")
    neg_inf = imp.scalar(float("-inf"))
    # over columns: per row, the largest X * (largest x weight) among X >= 0 and
    # X * (smallest x weight) among X < 0 (-inf where none)
    x5 = imp.op(g.ReshapeOp(xb, [rb, c, h, 1, w]))
    big_x, small_x = (imp.op(g.ReshapeOp(v, [r, 1, 1, ow, w])) for v in wx[:2])
    hit_x = imp.op(g.GreaterEqualOp(big_x, imp.scalar(0.0)))
    nonneg = imp.op(g.GreaterEqualOp(x5, imp.scalar(0.0)))
    reached = imp.op(g.AndOp(hit_x, nonneg))
    pos_t = imp.op(g.WhereOp(reached, imp.op(g.MulOp(x5, big_x)), neg_inf))
    reached = imp.op(g.AndOp(hit_x, imp.op(g.NotOp(nonneg))))
    neg_t = imp.op(g.WhereOp(reached, imp.op(g.MulOp(x5, small_x)), neg_inf))
    rows_pos = imp.op(g.ReduceMaxOp(pos_t, axes=[4], keepdims=0))  # (R, C, H, ow)
    rows_neg = imp.op(g.ReduceMaxOp(neg_t, axes=[4], keepdims=0))
    # over rows: the same with the y weights (both non-negative factors keep the order)
    big_y, small_y = (imp.op(g.ReshapeOp(v, [r, 1, oh, h, 1])) for v in wy[:2])
    hit_y = imp.op(g.GreaterEqualOp(big_y, imp.scalar(0.0)))
    best = None
    for rows, factor in ((rows_pos, big_y), (rows_neg, small_y)):
        rows5 = imp.op(g.ReshapeOp(rows, [r, c, 1, h, ow]))
        some = imp.op(g.AndOp(hit_y, imp.op(g.GreaterOp(rows5, neg_inf))))
        t = imp.op(g.WhereOp(some, imp.op(g.MulOp(rows5, factor)), neg_inf))
        best = t if best is None else imp.op(g.MaxOp(best, t))
    assert best is not None
    best = imp.op(g.ReduceMaxOp(best, axes=[3], keepdims=0))  # (R, C, oh, ow)
    # a sample outside on either axis contributes a term 0
    outside = imp.op(
        g.OrOp(
            imp.op(g.ReshapeOp(wy[2], [r, 1, oh, 1])),
            imp.op(g.ReshapeOp(wx[2], [r, 1, 1, ow])),
        )
    )
    best = imp.op(g.WhereOp(outside, imp.op(g.MaxOp(best, imp.scalar(0.0))), best))
    # a bin without samples is 0
    some = imp.op(
        g.AndOp(
            imp.op(g.GreaterEqualOp(cy, imp.scalar(1.0))),
            imp.op(g.GreaterEqualOp(cx, imp.scalar(1.0))),
        )
    )
    return imp.op(g.WhereOp(imp.op(g.ReshapeOp(some, [r, 1, 1, 1])), best, imp.scalar(0.0)))
