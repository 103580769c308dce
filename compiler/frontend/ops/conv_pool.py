"""Converters of convolution and pooling over any number of spatial dims (they share the window
and auto_pad logic).

Conv, MaxPool, AveragePool and the global pools are native graph ops; ConvTranspose and LpPool
are composed of them (zero insertion + a convolution with the flipped kernel; a depthwise
convolution with a ones kernel summing |x|^p).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    results,
    text,
)
from dialects import graph as g
from dialects import graph_shapes as S

_AUTO_PAD = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _auto_pad(
    mode: str,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> list[int]:
    """Explicit (begins..., ends...) pads for an ONNX auto_pad mode."""
    if mode in ("NOTSET", ""):
        return list(pads) if pads else [0] * (2 * len(spatial))
    if mode == "VALID":
        return [0] * (2 * len(spatial))
    if mode not in _AUTO_PAD:
        raise S.ShapeError(f"unknown auto_pad {mode!r} (expected {', '.join(_AUTO_PAD)})")
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


_WORDS = ("no", "one", "two", "three", "four", "five", "six")


def _count(n: int, what: str) -> str:
    """'two positive numbers', 'one positive number'."""
    word = _WORDS[n] if n < len(_WORDS) else str(n)
    return f"{word} {what} number{'' if n == 1 else 's'}"


def _spatial_rank(imp: Importer, node: onnx.NodeProto) -> int:
    x = imp.shape(node.input[0])
    if len(x) < 3:
        raise imp.error(f"input must have rank >= 3 (N, C, spatial dims...), got shape {list(x)}")
    return len(x) - 2


def _ints_attr(
    imp: Importer, node: onnx.NodeProto, name: str, n: int, default: int, least: int = 1
) -> list[int]:
    """An integer list attribute with one value per spatial dim (n), each >= least."""
    values = [int(v) for v in attrs(node).get(name, [default] * n)]
    if len(values) != n or (values and min(values) < least):
        bound = "positive" if least == 1 else "non-negative"
        raise imp.error(f"{name} must be {_count(n, bound)} (one per spatial dim), got {values}")
    return values


def _window(
    imp: Importer, node: onnx.NodeProto, kernel: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """strides, explicit pads (begins..., ends...) and dilations of a Conv or pooling node."""
    r = _spatial_rank(imp, node)
    a = attrs(node)
    if len(kernel) != r or min(kernel) < 1:
        raise imp.error(
            f"kernel_shape must be {_count(r, 'positive')} (one per spatial dim), "
            f"got {list(kernel)}"
        )
    strides = _ints_attr(imp, node, "strides", r, 1)
    dilations = _ints_attr(imp, node, "dilations", r, 1)
    pads = [int(p) for p in a.get("pads", [])]
    if pads and (len(pads) != 2 * r or min(pads) < 0):
        raise imp.error(f"pads must be {_count(2 * r, 'non-negative')} (begins, ends), got {pads}")
    x = imp.shape(node.input[0])
    pads = _auto_pad(text(a.get("auto_pad", "NOTSET")), x[2:], kernel, strides, dilations, pads)
    return strides, pads, dilations


def _kernel(imp: Importer, node: onnx.NodeProto, w_spatial: Sequence[int]) -> list[int]:
    kernel = [int(k) for k in attrs(node).get("kernel_shape", w_spatial)]
    if kernel != list(w_spatial):
        raise imp.error(
            f"kernel_shape {kernel} does not match the weight's spatial shape {list(w_spatial)}"
        )
    return kernel


@converter("Conv")
def convert_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    return [conv(imp, node, imp.value(node.input[0]), imp.value(node.input[1]), bias)]


def conv(
    imp: Importer, node: onnx.NodeProto, x: SSAValue, w: SSAValue, bias: SSAValue | None
) -> SSAValue:
    """graph.conv of x (shaped as the node's input 0) and w with the node's window attributes
    (Conv, and the integer convolutions of compiler/frontend/ops/quantization.py)."""
    r = _spatial_rank(imp, node)
    w_shape = imp.shape_of(w)
    if len(w_shape) != r + 2:
        raise imp.error(
            f"weight must be {r + 2}-D (M, C/group, k1..k{r}), got shape {list(w_shape)}"
        )
    kernel = _kernel(imp, node, w_shape[2:])
    strides, pads, dilations = _window(imp, node, kernel)
    return imp.op(
        g.ConvOp(
            x,
            w,
            bias,
            strides=strides,
            pads=pads,
            dilations=dilations,
            group=attrs(node).get("group", 1),
        )
    )


def _pool_kernel(node: onnx.NodeProto) -> list[int]:
    """kernel_shape (required: the importer checks it is there)."""
    return [int(k) for k in attrs(node)["kernel_shape"]]


def _ceil_mode(imp: Importer, node: onnx.NodeProto) -> int:
    ceil_mode = int(attrs(node).get("ceil_mode", 0))
    if ceil_mode not in (0, 1):
        raise imp.error(f"ceil_mode must be 0 or 1, got {ceil_mode}")
    return ceil_mode


@converter("MaxPool", "AveragePool")
def convert_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    kernel = _pool_kernel(node)
    strides, pads, dilations = _window(imp, node, kernel)
    x = imp.value(node.input[0])
    ceil_mode = _ceil_mode(imp, node)
    if node.op_type == "MaxPool":
        y = imp.op(
            g.MaxPoolOp(
                x,
                kernel=kernel,
                strides=strides,
                pads=pads,
                dilations=dilations,
                ceil_mode=ceil_mode,
            )
        )
        if len(node.output) > 1 and node.output[1]:
            order = int(a.get("storage_order", 0))
            if order not in (0, 1):
                raise imp.error(f"storage_order must be 0 or 1, got {order}")
            return [y, _argmax_indices(imp, x, y, kernel, strides, pads, dilations, order)]
        return [y]
    include = int(a.get("count_include_pad", 0))
    if include not in (0, 1):
        raise imp.error(f"count_include_pad must be 0 or 1, got {include}")
    avg = g.AvgPoolOp(
        x,
        kernel=kernel,
        strides=strides,
        pads=pads,
        dilations=dilations,
        ceil_mode=ceil_mode,
        count_include_pad=include,
    )
    return results(imp.emit(avg))


def _argmax_indices(
    imp: Importer,
    x: SSAValue,
    y: SSAValue,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    storage_order: int,
) -> Value:
    """MaxPool's Indices: the flat index into x (batch and channel included; spatial dims
    row-major, or column-major with storage_order 1) of the first window tap, in scan order,
    that holds the max. One strided slice of the -inf-padded input per tap is compared with
    the max; where-selects from the last tap to the first keep the first match."""
    xs, ys = imp.shape_of(x), imp.shape_of(y)
    r = len(xs) - 2
    sp, out = xs[2:], ys[2:]
    need = [
        (o - 1) * s + (k - 1) * d + 1
        for o, s, k, d in zip(out, strides, kernel, dilations, strict=True)
    ]
    ends = [max(0, nd - (n + pads[i])) for i, (nd, n) in enumerate(zip(need, sp, strict=True))]
    xp = imp.op(g.PadOp(x, pads=[0, 0, *pads[:r], 0, 0, *ends], value=float("-inf")))
    place = np.cumprod([1, *sp[:0:-1]])[::-1] if not storage_order else np.cumprod([1, *sp[:-1]])
    grid = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    result: SSAValue | None = None
    for tap in reversed(list(np.ndindex(*kernel))):
        pos = [grid[i] * strides[i] - pads[i] + tap[i] * dilations[i] for i in range(r)]
        flat = sum(p * int(place[i]) for i, p in enumerate(pos)).astype(np.int64)
        idx = imp.op(g.ConstantOp(flat.reshape(1, 1, *out)))
        if result is None:  # the last tap: taken where no earlier one holds the max
            result = idx
            continue
        starts = [0, 0, *(t * d for t, d in zip(tap, dilations, strict=True))]
        stops = [
            xs[0],
            xs[1],
            *((o - 1) * s + st + 1 for o, s, st in zip(out, strides, starts[2:], strict=True)),
        ]
        v = imp.op(g.SliceOp(xp, starts=starts, ends=stops, steps=[1, 1, *strides]))
        result = imp.op(g.WhereOp(imp.op(g.EqualOp(v, y)), idx, result))
    assert result is not None
    channel = np.arange(xs[0] * xs[1], dtype=np.int64).reshape(xs[0], xs[1], *[1] * r)
    base = imp.op(g.ConstantOp(channel * int(np.prod(sp))))
    return imp.op(g.AddOp(result, base))  # (1, 1, out..) + (N, C, 1..)


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls = g.GlobalAvgPoolOp if node.op_type == "GlobalAveragePool" else g.GlobalMaxPoolOp
    return results(imp.emit(cls(imp.value(node.input[0]))))


@converter("LpPool")
def convert_lp_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(sum over the window of |x|^p)^(1/p), padding counting as zeros: a depthwise convolution
    with a ones kernel sums the window; ceil_mode's overhang is more zero padding."""
    a = attrs(node)
    p = float(a.get("p", 2))
    if not p > 0:
        raise imp.error(f"p must be positive, got {a.get('p')}")
    kernel = _pool_kernel(node)
    strides, pads, dilations = _window(imp, node, kernel)
    ceil_mode = _ceil_mode(imp, node)
    x = imp.value(node.input[0])
    xs = imp.shape_of(x)
    r = len(xs) - 2
    if ceil_mode:
        out = S.pool(xs, kernel, strides, pads, dilations, ceil_mode)[2:]
        for i in range(r):
            need = (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
            pads[r + i] += max(0, need - (xs[2 + i] + pads[i] + pads[r + i]))
    if p == 2:
        powered = imp.op(g.MulOp(x, x))
    else:
        powered = imp.op(g.AbsOp(x))
        if p != 1:
            powered = imp.op(g.PowOp(powered, imp.scalar(p)))
    ones = imp.op(g.ConstantOp(np.ones((xs[1], 1, *kernel), np.float32)))
    total = imp.op(
        g.ConvOp(powered, ones, None, strides=strides, pads=pads, dilations=dilations, group=xs[1])
    )
    if p == 1:
        return [total]
    if p == 2:
        return [imp.op(g.SqrtOp(total))]
    return [imp.op(g.PowOp(total, imp.scalar(1.0 / p)))]


# -- ConvTranspose ----------------------------------------------------------------------------


def _transpose_pads(
    imp: Importer,
    node: onnx.NodeProto,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
) -> tuple[list[int], list[int]]:
    """The output's spatial shape and its begin pads (how much of the full transposed
    convolution's start is cropped), as ONNX (and its reference) derive them."""
    a = attrs(node)
    r = len(spatial)
    mode = text(a.get("auto_pad", "NOTSET")) or "NOTSET"
    if mode not in _AUTO_PAD:
        raise imp.error(f"unknown auto_pad {mode!r} (expected {', '.join(_AUTO_PAD)})")
    full = [
        s * (n - 1) + op + (k - 1) * d + 1
        for n, k, s, d, op in zip(spatial, kernel, strides, dilations, output_padding, strict=True)
    ]
    out_shape = [int(v) for v in a.get("output_shape", [])]
    if out_shape:
        if len(out_shape) == r + 2:  # some exporters include N and C
            out_shape = out_shape[2:]
        if len(out_shape) != r or min(out_shape) < 1:
            raise imp.error(
                f"output_shape must be {_count(r, 'positive')} (one per spatial dim), "
                f"got {out_shape}"
            )
    pads = [int(v) for v in a.get("pads", [])]
    if pads and (len(pads) != 2 * r or min(pads) < 0):
        raise imp.error(f"pads must be {_count(2 * r, 'non-negative')} (begins, ends), got {pads}")
    if mode == "VALID":
        pads = [0] * (2 * r)
    if pads:  # given pads win over auto_pad (as in ONNX's reference)
        if out_shape:
            return out_shape, pads[:r]
        out = [f - pads[i] - pads[r + i] for i, f in enumerate(full)]
        if min(out) < 1:
            raise imp.error(f"pads {pads} leave an empty output (shape {out})")
        return out, pads[:r]
    if not out_shape:
        if mode in ("SAME_UPPER", "SAME_LOWER"):
            out_shape = [n * s for n, s in zip(spatial, strides, strict=True)]
        else:
            out_shape = list(full)
    begins = []
    for f, o in zip(full, out_shape, strict=True):
        total = f - o
        begins.append(total // 2 if mode == "SAME_UPPER" else total - total // 2)
    return out_shape, begins


@converter("ConvTranspose")
def convert_conv_transpose(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Zero insertion (a reshape, pad and reshape spreading the input `stride` apart), padding
    by the dilated kernel extent less the begin pads (negative: a crop), then a stride-1
    convolution with the kernel flipped and its channel axes swapped per group."""
    a = attrs(node)
    r = _spatial_rank(imp, node)
    xs = imp.shape(node.input[0])
    w_shape = imp.shape(node.input[1])
    group = int(a.get("group", 1))
    if len(w_shape) != r + 2:
        raise imp.error(
            f"weight must be {r + 2}-D (C, M/group, k1..k{r}), got shape {list(w_shape)}"
        )
    if group < 1 or xs[1] % group or w_shape[0] != xs[1]:
        raise imp.error(
            f"weight of shape {list(w_shape)} and group {group} do not fit {xs[1]} input channels"
        )
    kernel = _kernel(imp, node, w_shape[2:])
    strides = _ints_attr(imp, node, "strides", r, 1)
    dilations = _ints_attr(imp, node, "dilations", r, 1)
    output_padding = _ints_attr(imp, node, "output_padding", r, 0, least=0)
    out_shape, begins = _transpose_pads(
        imp, node, xs[2:], kernel, strides, dilations, output_padding
    )
    c, mg = w_shape[0], w_shape[1]
    cg = c // group
    x = imp.value(node.input[0])
    n = xs[0]
    if any(s > 1 for s in strides):  # (N, C, L1, 1, L2, 1..) padded to (N, C, L1, s1, ..)
        spread = [n, c] + [v for li in xs[2:] for v in (li, 1)]
        x = imp.op(g.ReshapeOp(x, spread))
        lows = [0] * len(spread)
        highs = [0, 0] + [v for s in strides for v in (0, s - 1)]
        x = imp.op(g.PadOp(x, pads=lows + highs))
        x = imp.op(g.ReshapeOp(x, [n, c, *(li * s for li, s in zip(xs[2:], strides, strict=True))]))
    ext = [(k - 1) * d for k, d in zip(kernel, dilations, strict=True)]
    lo = [e - b for e, b in zip(ext, begins, strict=True)]
    zs = imp.shape_of(x)[2:]
    hi = [o + b - z for o, b, z in zip(out_shape, begins, zs, strict=True)]
    if any(lo) or any(hi):
        x = imp.op(g.PadOp(x, pads=[0, 0, *lo, 0, 0, *hi]))
    # weights (C, M/g, k..) = (g, C/g, M/g, k..) -> (g, M/g, C/g, k..) -> (M, C/g, k..) flipped
    wconst = imp.const(node.input[1])
    perm = [0, 2, 1, *range(3, r + 3)]
    wshape = [group * mg, cg, *kernel]
    if wconst is not None:
        wt = wconst.reshape(group, cg, mg, *kernel).transpose(perm).reshape(wshape)
        wt = wt[(slice(None), slice(None), *(slice(None, None, -1),) * r)]
        w = imp.op(g.ConstantOp(np.ascontiguousarray(wt, dtype=np.float32)))
    else:
        w = imp.op(g.ReshapeOp(imp.value(node.input[1]), [group, cg, mg, *kernel]))
        w = imp.op(g.ReshapeOp(imp.op(g.TransposeOp(w, perm=perm)), wshape))
        w = imp.op(
            g.SliceOp(
                w,
                starts=[0, 0, *(k - 1 for k in kernel)],
                ends=[wshape[0], cg, *(-1 for _ in kernel)],
                steps=[1, 1, *(-1 for _ in kernel)],
            )
        )
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    return [imp.op(g.ConvOp(x, w, bias, dilations=dilations, group=group))]
