"""Resize (opsets 11-19; Upsample and Resize-10 reach it through onnx's version converter).

Resizing is separable, and along one axis it is a static linear map: output i is a weighted
sum of a few input elements (its taps), all known at import time once the sizes are. Each
resized axis therefore becomes, per tap, a graph.gather of the tap's input indices along that
axis times a broadcast static weight, summed (nearest: a single gather); a map with many taps
(antialiased downscaling) becomes one matmul with the dense map instead. The taps follow onnx's
reference implementation (onnx/reference/ops/op_resize.py), which the tests compare against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
from dialects import graph_shapes as S

MODES = ("nearest", "linear", "cubic")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
TRANSFORMS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
    "tf_half_pixel_for_nn",
)
POLICIES = ("stretch", "not_larger", "not_smaller")

MAX_GATHER_TAPS = 4
"""Above this many taps per output element, an axis is resized by one matmul with the dense map."""

MAX_DENSE_MAP = 2**22
"""The most elements of one axis' dense map (output x input extent) held at import time."""


def source_coordinates(
    transform: str,
    out_len: int,
    in_len: int,
    scale: float,
    roi: tuple[float, float] | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each output index's coordinate in the input (float64), and for tf_crop_and_resize which
    outputs fall outside the input (they take extrapolation_value)."""
    y = np.arange(out_len, dtype=np.float64)
    width = scale * in_len  # the real-valued output length, as the reference uses it
    outside = None
    if transform == "align_corners":
        x = np.zeros(out_len) if width == 1 else y * (in_len - 1) / (width - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_half_pixel_for_nn":
        x = (y + 0.5) / scale
    elif transform == "tf_crop_and_resize":
        assert roi is not None
        lo, hi = roi
        if width == 1:
            x = np.full(out_len, (hi - lo) * (in_len - 1) / 2)
        else:
            x = y * (hi - lo) * (in_len - 1) / (width - 1)
        x = x + lo * (in_len - 1)
        outside = (x < 0) | (x > in_len - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_len / 2 * (1 - out_len / width)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def _coefficients(
    ratio: np.ndarray, scale: float, mode: str, nearest_mode: str, a: float, antialias: bool
) -> np.ndarray:
    """The interpolation weights of each output's taps, [out, n], from its fractional position
    `ratio` in (0, 1] past the tap left of it."""
    r = ratio[:, None]
    if mode == "nearest":
        whole = r == 1.0
        if nearest_mode == "round_prefer_floor":
            right = r > 0.5
        elif nearest_mode == "round_prefer_ceil":
            right = r >= 0.5
        else:
            right = np.full_like(r, nearest_mode == "ceil", dtype=bool)
        right = right | whole
        return np.concatenate([~right, right], axis=1).astype(np.float64)
    if mode == "linear":
        if not antialias:
            return np.concatenate([1 - r, r], axis=1)
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start)[None, :] - r) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum(axis=1, keepdims=True)
    if not antialias:
        t = r + 1
        u = 1 - r
        v = u + 1
        return np.concatenate(
            [
                ((a * t - 5 * a) * t + 8 * a) * t - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1,
                ((a + 2) * u - (a + 3)) * u * u + 1,
                ((a * v - 5 * a) * v + 8 * a) * v - 4 * a,
            ],
            axis=1,
        )
    s = min(scale, 1.0)
    i_start = int(np.floor(-2 / s) + 1)
    x = np.abs(s * (np.arange(i_start, 2 - i_start)[None, :] - r))
    c = np.where(
        x <= 1,
        (a + 2) * x**3 - (a + 3) * x**2 + 1,
        np.where(x < 2, a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a, 0.0),
    )
    return c / c.sum(axis=1, keepdims=True)


def axis_map(
    in_len: int,
    out_len: int,
    scale: float,
    mode: str,
    transform: str,
    nearest_mode: str = "round_prefer_floor",
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
    antialias: bool = False,
    roi: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The 1-D resampling of one axis as a dense [out_len, in_len] float64 matrix, and the
    outputs that take extrapolation_value (tf_crop_and_resize) or None."""
    x, outside = source_coordinates(transform, out_len, in_len, scale, roi)
    x_int = np.floor(x)
    ratio = np.where(x == x_int, 1.0, x - x_int)
    coeffs = _coefficients(ratio, scale, mode, nearest_mode, cubic_coeff_a, antialias)
    n = coeffs.shape[1]
    # the n input positions nearest to x, ties to the smaller (the reference's neighbours)
    pad = math.ceil(n / 2)
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        start = p + np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        start = p + np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    taps = start[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((taps < 0) | (taps >= in_len), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    dense = np.zeros((out_len, in_len), dtype=np.float64)
    rows = np.broadcast_to(np.arange(out_len)[:, None], taps.shape)
    np.add.at(dense, (rows, np.clip(taps, 0, in_len - 1)), coeffs)  # edge padding = clamping
    return dense, outside


def _taps(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nonzero entries of each row of a dense map: indices and weights [taps, out]."""
    nz = dense != 0
    width = max(int(nz.sum(axis=1).max()), 1)
    idx = np.zeros((width, dense.shape[0]), dtype=np.int64)
    w = np.zeros((width, dense.shape[0]), dtype=np.float64)
    for row in range(dense.shape[0]):
        cols = np.flatnonzero(nz[row])
        idx[: len(cols), row] = cols
        w[: len(cols), row] = dense[row, cols]
    return idx, w


def apply_axis_map(imp: Importer, x: SSAValue, axis: int, dense: np.ndarray) -> SSAValue:
    """x resampled along `axis` by the static map `dense` [out, in]."""
    rank = len(imp.shape_of(x))
    idx, w = _taps(dense)
    if len(idx) > MAX_GATHER_TAPS and element_type_of(x) == f32:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inv = [perm.index(d) for d in range(rank)]
        t = x if axis == rank - 1 else imp.op(g.TransposeOp(x, perm=perm))
        t = imp.op(g.MatmulOp(t, imp.op(g.ConstantOp(dense.T.astype(np.float32)))))
        return t if axis == rank - 1 else imp.op(g.TransposeOp(t, perm=inv))
    if len(idx) == 1 and np.all(w == 1.0):
        return imp.op(g.GatherOp(x, imp.op(g.ConstantOp(idx[0])), axis=axis))
    if element_type_of(x) != f32:
        raise imp.error("interpolating modes (linear, cubic) need float data")
    acc: SSAValue | None = None
    bshape = [len(w[0])] + [1] * (rank - axis - 1)
    for k in range(len(idx)):
        gathered = imp.op(g.GatherOp(x, imp.op(g.ConstantOp(idx[k])), axis=axis))
        weight = imp.op(g.ConstantOp(w[k].astype(np.float32).reshape(bshape)))
        term = imp.op(g.MulOp(gathered, weight))
        acc = term if acc is None else imp.op(g.AddOp(acc, term))
    assert acc is not None
    return acc


def _optional_const(imp: Importer, node: onnx.NodeProto, i: int, what: str) -> np.ndarray | None:
    """An attribute-like input, None when absent or empty (an empty tensor means 'not given')."""
    if not imp.has(node, i):
        return None
    v = imp.const_input(node, i, what)
    return None if v.size == 0 else v


def _choice(imp: Importer, a: dict, name: str, default: str, allowed: Sequence[str]) -> str:
    v = text(a.get(name, default))
    if v not in allowed:
        raise imp.error(f"{name} {v!r} is not supported (one of {', '.join(allowed)})")
    return v


@converter("Resize")
def convert_resize(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    mode = _choice(imp, a, "mode", "nearest", MODES)
    transforms = TRANSFORMS if imp.opset < 13 else TRANSFORMS[:-1]
    transform = _choice(imp, a, "coordinate_transformation_mode", "half_pixel", transforms)
    nearest_mode = _choice(imp, a, "nearest_mode", "round_prefer_floor", NEAREST_MODES)
    policy = _choice(imp, a, "keep_aspect_ratio_policy", "stretch", POLICIES)
    antialias = bool(a.get("antialias", 0))
    if antialias and mode == "nearest":
        raise imp.error("antialias applies to the linear and cubic modes, not to nearest")
    x = x0 = imp.value(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    axes = [S.normalize_axis(int(d), rank) for d in a.get("axes", range(rank))]
    if len(set(axes)) != len(axes):
        raise imp.error(f"axes {list(a['axes'])} repeat an axis")
    roi_in = _optional_const(imp, node, 1, "roi")
    scales_in = _optional_const(imp, node, 2, "scales")
    sizes_in = _optional_const(imp, node, 3, "sizes")
    if (scales_in is None) == (sizes_in is None):
        raise imp.error("exactly one of scales and sizes must be given (as a non-empty tensor)")
    scale = [1.0] * rank
    out = list(shape)
    if scales_in is not None:
        if scales_in.size != len(axes) or not np.issubdtype(scales_in.dtype, np.floating):
            raise imp.error(f"scales must be {len(axes)} floats, got {scales_in.tolist()}")
        for d, s in zip(axes, scales_in.reshape(-1), strict=True):
            if not s > 0:
                raise imp.error(f"scales must be positive, got {scales_in.tolist()}")
            scale[d] = float(s)
            out[d] = int(float(s) * shape[d])  # the float64 product, truncated (reference)
    else:
        assert sizes_in is not None
        if sizes_in.size != len(axes) or not np.issubdtype(sizes_in.dtype, np.integer):
            raise imp.error(f"sizes must be {len(axes)} integers, got {sizes_in.tolist()}")
        sizes = [int(v) for v in sizes_in.reshape(-1)]
        if min(sizes) < 1:
            raise imp.error(f"sizes must be positive, got {sizes}")
        ratios = [n / shape[d] for d, n in zip(axes, sizes, strict=True)]
        if policy != "stretch":
            common = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [common] * len(axes)
            sizes = [int(common * shape[d] + 0.5) for d in axes]
        for d, n, s in zip(axes, sizes, ratios, strict=True):
            scale[d], out[d] = s, n
    if 0 in out:
        raise imp.error(f"the output shape {out} has a zero dimension")
    roi: list[tuple[float, float]] | None = None
    if transform == "tf_crop_and_resize":
        if roi_in is None:
            raise imp.error("coordinate_transformation_mode tf_crop_and_resize needs roi")
        vals = [float(v) for v in roi_in.reshape(-1)]
        if len(vals) != 2 * len(axes):
            raise imp.error(f"roi must have {2 * len(axes)} values, got {len(vals)}")
        roi = [(0.0, 1.0)] * rank
        for i, d in enumerate(axes):
            roi[d] = (vals[i], vals[len(axes) + i])
    outside = np.zeros([1] * rank, dtype=bool)
    for d in axes:
        r = roi[d] if roi is not None else None
        if (
            math.isclose(scale[d], 1.0)
            and out[d] == shape[d]
            and (r is None or (math.isclose(r[0], 0.0) and math.isclose(r[1], 1.0)))
        ):
            continue  # identity along this axis (as the reference skips it)
        imp.check_elements([out[d], shape[d]], f"the resampling map of axis {d}", MAX_DENSE_MAP)
        dense, off = axis_map(
            shape[d],
            out[d],
            scale[d],
            mode,
            transform,
            nearest_mode,
            float(a.get("cubic_coeff_a", -0.75)),
            bool(a.get("exclude_outside", 0)),
            antialias,
            r,
        )
        x = apply_axis_map(imp, x, d, dense)
        if off is not None and off.any():
            bshape = [1] * rank
            bshape[d] = out[d]
            outside = outside | off.reshape(bshape)
    if outside.any():
        fill = imp.scalar(float(a.get("extrapolation_value", 0.0)), like=x)
        x = imp.op(g.WhereOp(imp.op(g.ConstantOp(outside)), fill, x))
    if x is x0:  # every axis kept its size
        x = imp.op(g.IdentityOp(x))
    return [x]
