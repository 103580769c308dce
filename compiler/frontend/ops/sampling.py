"""GridSample (opsets 16-22) and AffineGrid (opset 20), composed of graph ops.

GridSample reads its input at run-time coordinates, so unlike Resize nothing about the taps is
known at import time: per spatial axis, the grid's normalized coordinate is mapped to a pixel
coordinate, moved inside by the padding mode (border clamps, reflection folds), and turned into
taps (nearest: one, linear: two, cubic: four) each with an integer index and a weight, all
computed elementwise at run time. The interpolation is separable, so every combination of one
tap per axis is one graph.gather of the flattened input (rows of channels) at the summed flat
index, scaled by the product of the axes' weights (and of their in-range flags, for zero
padding). The arithmetic follows onnx's reference implementation
(onnx/reference/ops/op_grid_sample.py), which the node tests were generated with.

AffineGrid is a matmul of the static base grid (homogeneous normalized coordinates) by theta.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32
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

CUBIC_ALPHA = -0.75
"""The cubic convolution coefficient GridSample uses (Keys; PyTorch's and onnx's choice)."""


def _c(imp: Importer, v: float) -> SSAValue:
    return imp.scalar(v)


def _reflect(imp: Importer, x: SSAValue, lo: float, hi: float) -> SSAValue:
    """x folded into [lo, hi] by reflecting at the borders until it lies inside (the
    reference's _gs_reflect), elementwise: repeated reflection is a triangle wave of period
    2 (hi - lo), lo + s - |((x - lo) mod 2s) - s|, which leaves x inside as it is. Each value is
    used once or twice, so fusion does not multiply the arithmetic."""
    span = hi - lo
    if span <= 0:  # a single position (length 1 with align_corners): everything lands on it
        return imp.op(g.ConstantOp(np.full(imp.shape_of(x), lo, dtype=np.float32)))
    v = imp.op(g.SubOp(x, _c(imp, lo)))
    periods = imp.op(g.FloorOp(imp.op(g.MulOp(v, _c(imp, 0.5 / span)))))
    v = imp.op(g.SubOp(v, imp.op(g.MulOp(periods, _c(imp, 2.0 * span)))))
    dist = imp.op(g.AbsOp(imp.op(g.SubOp(v, _c(imp, span)))))
    return imp.op(g.SubOp(_c(imp, lo + span), dist))


def _cubic_kernel(imp: Importer, d: SSAValue) -> SSAValue:
    """Keys' cubic convolution kernel at distances d in [0, 2] (the reference's
    _gs_get_cubic_coeffs): (a+2)d^3 - (a+3)d^2 + 1 up to 1, a d^3 - 5a d^2 + 8a d - 4a
    beyond (both are 0 at d = 1)."""
    a = CUBIC_ALPHA

    def poly(coefficients: list[float]) -> SSAValue:  # Horner, highest power first
        p = imp.op(g.MulOp(d, _c(imp, coefficients[0])))
        for co in coefficients[1:-1]:
            p = imp.op(g.MulOp(imp.op(g.AddOp(p, _c(imp, co))), d))
        return imp.op(g.AddOp(p, _c(imp, coefficients[-1])))

    near = poly([a + 2, -(a + 3), 0.0, 1.0])
    far = poly([a, -5 * a, 8 * a, -4 * a])
    return imp.op(g.WhereOp(imp.op(g.LessEqualOp(d, _c(imp, 1.0))), near, far))


@converter("GridSample")
def convert_grid_sample(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    mode = text(a.get("mode", "bilinear" if imp.opset < 20 else "linear"))
    modes = ("bilinear", "nearest", "bicubic") if imp.opset < 20 else ("linear", "nearest", "cubic")
    if mode not in modes:
        raise imp.error(
            f"mode must be one of {', '.join(modes)} at opset {imp.opset}, got '{mode}'"
        )
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = text(a.get("padding_mode", "zeros"))
    if padding not in ("zeros", "border", "reflection"):
        raise imp.error(f"padding_mode must be zeros, border or reflection, got '{padding}'")
    align = int(a.get("align_corners", 0))
    if align not in (0, 1):
        raise imp.error(f"align_corners must be 0 or 1, got {align}")

    x, grid = imp.value(node.input[0]), imp.value(node.input[1])
    xs, gs = imp.shape_of(x), imp.shape_of(grid)
    r = len(xs) - 2
    if r < 1:
        raise imp.error(f"X must have rank >= 3, got shape {list(xs)}")
    if imp.opset < 20 and r != 2:
        raise imp.error(f"X must be 4-D at opset {imp.opset} (N-D needs opset 20), got {list(xs)}")
    if len(gs) != r + 2 or gs[0] != xs[0] or gs[-1] != r:
        raise imp.error(
            f"grid must have shape [{xs[0]}, <{r} output sizes>, {r}] for X of shape {list(xs)}, "
            f"got {list(gs)}"
        )
    if element_type_of(grid) != f32:
        raise imp.error(f"grid must be float32, got {element_type_of(grid)}")
    if mode != "nearest" and element_type_of(x) != f32:
        raise imp.error(f"{mode} interpolation needs float32 X, got {element_type_of(x)}")
    n, c, dims = xs[0], xs[1], xs[2:]
    out = list(gs[1:-1])
    size = math.prod(dims)

    # X as rows of channels: (N * prod(dims), C); a gather at flat indices (N, *out, K...)
    # reads (N, *out, K..., C)
    rows = imp.op(g.ReshapeOp(x, [n, c, size]))
    rows = imp.op(g.ReshapeOp(imp.op(g.TransposeOp(rows, perm=[0, 2, 1])), [n * size, c]))
    # per axis, the coordinates (N, *out, 1): the grid lists them innermost axis first
    pieces = list(imp.emit(g.SplitOp(grid, axis=r + 1, sizes=[1] * r)).results) if r > 1 else [grid]
    coords = [pieces[r - 1 - i] for i in range(r)]

    # per axis, the taps along a trailing axis of K taps: flat index contributions (i64) and
    # weights (f32; None for nearest) shaped (N, *out, 1, .., K, .., 1), K at the axis' place
    # among r trailing tap axes, so that they broadcast into every combination of taps
    lead = [n, *out]
    flat: SSAValue = imp.op(
        g.ConstantOp((np.arange(n, dtype=np.int64) * size).reshape(n, *[1] * (len(out) + r)))
    )
    weight: SSAValue | None = None
    valid: SSAValue | None = None
    for i, length in enumerate(dims):
        stride = math.prod(dims[i + 1 :])
        idx, w = _taps(imp, coords[i], length, mode, padding, align)
        k = imp.shape_of(idx)[-1]
        tap_shape = [*lead, *[k if j == i else 1 for j in range(r)]]
        if padding == "zeros":
            inside = imp.op(
                g.AndOp(
                    imp.op(g.GreaterEqualOp(idx, _c(imp, 0.0))),
                    imp.op(g.LessEqualOp(idx, _c(imp, length - 1.0))),
                )
            )
            inside = imp.op(g.ReshapeOp(inside, tap_shape))
            valid = inside if valid is None else imp.op(g.AndOp(valid, inside))
        elif padding == "reflection":
            idx = _reflect(imp, idx, *_bounds(length, align))
        # truncation toward zero, as the reference's int(); the clamp keeps every read
        # inside (zero padding masks the clamped ones out)
        ii = imp.op(g.CastOp(imp.op(g.ClipOp(idx, min=0.0, max=length - 1.0)), to="i64"))
        if stride != 1:
            ii = imp.op(g.MulOp(ii, imp.op(g.ConstantOp(np.asarray(stride, np.int64)))))
        flat = imp.op(g.AddOp(flat, imp.op(g.ReshapeOp(ii, tap_shape))))
        if w is not None:
            w = imp.op(g.ReshapeOp(w, tap_shape))
            weight = w if weight is None else imp.op(g.MulOp(weight, w))

    tap_axes = list(range(len(lead), len(lead) + r))
    picked = imp.op(g.GatherOp(rows, flat, axis=0))  # (N, *out, K..., C)
    taps_shape = [*imp.shape_of(flat), 1]
    if weight is not None:
        if valid is not None:
            weight = imp.op(g.WhereOp(valid, weight, _c(imp, 0.0)))
        picked = imp.op(g.MulOp(picked, imp.op(g.ReshapeOp(weight, taps_shape))))
        total = imp.op(g.ReduceSumOp(picked, axes=tap_axes, keepdims=0))
    else:  # nearest: one tap per axis
        if valid is not None:
            mask = imp.op(g.ReshapeOp(valid, taps_shape))
            picked = imp.op(g.WhereOp(mask, picked, imp.scalar(0, like=x)))
        total = imp.op(g.ReshapeOp(picked, [*lead, c]))
    return [imp.op(g.TransposeOp(total, perm=[0, r + 1, *range(1, r + 1)]))]


def _bounds(length: int, align: int) -> tuple[float, float]:
    """The range of pixel coordinates inside the input along an axis."""
    return (0.0, length - 1.0) if align else (-0.5, length - 0.5)


def _taps(
    imp: Importer, gi: SSAValue, length: int, mode: str, padding: str, align: int
) -> tuple[SSAValue, SSAValue | None]:
    """One axis' taps from its normalized coordinates gi (N, *out, 1): their positions (float,
    integral; before padding) and weights, along a trailing axis of 1, 2 or 4 taps."""
    lo, hi = _bounds(length, align)
    if align:
        xi = imp.op(g.MulOp(imp.op(g.AddOp(gi, _c(imp, 1.0))), _c(imp, (length - 1) / 2)))
    else:
        xi = imp.op(g.MulOp(imp.op(g.AddOp(gi, _c(imp, 1.0))), _c(imp, length / 2)))
        xi = imp.op(g.SubOp(xi, _c(imp, 0.5)))
    if mode == "nearest":
        xi = imp.op(g.RoundOp(xi))  # half to even, as the reference (and PyTorch)
    if padding == "border":
        inside = imp.op(
            g.AndOp(
                imp.op(g.GreaterEqualOp(xi, _c(imp, lo))),
                imp.op(g.LessEqualOp(xi, _c(imp, hi))),
            )
        )
        clamped = imp.op(g.ClipOp(xi, min=0.0, max=length - 1.0))
        xi = imp.op(g.WhereOp(inside, xi, clamped))
    elif padding == "reflection":
        xi = _reflect(imp, xi, lo, hi)
    if mode == "nearest":
        return xi, None
    x0 = imp.op(g.FloorOp(xi))
    t = imp.op(g.SubOp(xi, x0))
    offsets = np.asarray([0.0, 1.0] if mode == "linear" else [-1.0, 0.0, 1.0, 2.0], np.float32)
    idx = imp.op(g.AddOp(x0, imp.op(g.ConstantOp(offsets))))
    # each tap's distance from the sample point, then the kernel of it
    d = imp.op(g.AbsOp(imp.op(g.SubOp(t, imp.op(g.ConstantOp(offsets))))))
    if mode == "linear":
        return idx, imp.op(g.SubOp(_c(imp, 1.0), d))
    return idx, _cubic_kernel(imp, d)


@converter("AffineGrid")
def convert_affine_grid(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """grid[n, ..., :] = theta[n] @ (x, y[, z], 1) over the static base grid of normalized
    coordinates (per axis: linspace(-1, 1) with align_corners, pixel centres without)."""
    align = int(attrs(node).get("align_corners", 0))
    if align not in (0, 1):
        raise imp.error(f"align_corners must be 0 or 1, got {align}")
    size = imp.int_input(node, 1, "size")
    theta = imp.value(node.input[0])
    ts = imp.shape_of(theta)
    if len(size) not in (4, 5):
        raise imp.error(f"size must have 4 (2-D) or 5 (3-D) entries, got {size}")
    r = len(size) - 2
    if ts != (size[0], r, r + 1):
        raise imp.error(
            f"theta must have shape {[size[0], r, r + 1]} for size {size}, got {list(ts)}"
        )
    if element_type_of(theta) != f32:
        raise imp.error(f"theta must be float32, got {element_type_of(theta)}")
    dims = size[2:]
    if min(dims) <= 0:
        raise imp.error(f"size must be positive, got {size}")
    axes = []
    for length in dims:
        k = np.arange(length, dtype=np.float64)
        if align:
            axes.append(-1.0 + 2.0 * k / (length - 1) if length > 1 else np.full(1, -1.0))
        else:
            axes.append((2.0 * k + 1.0) / length - 1.0)
    mesh = np.meshgrid(*axes, indexing="ij")  # per axis, (*dims)
    homo = np.stack([*mesh[::-1], np.ones(dims)], axis=-1).reshape(-1, r + 1)
    base = imp.op(g.ConstantOp(homo.astype(np.float32)))  # (prod(dims), r + 1)
    grid = imp.op(g.MatmulOp(base, imp.op(g.TransposeOp(theta, perm=[0, 2, 1]))))
    return [imp.op(g.ReshapeOp(grid, [size[0], *dims, r]))]
