"""Shape inference for the `graph` dialect.

Pure functions on shape tuples, shared by the op builders (to infer result types), the op
verifiers (to check them) and the ONNX frontend (to normalize attributes). They raise
`ShapeError` with a readable message; verifiers turn it into a `VerifyException`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any, NamedTuple

from xdsl.dialects.builtin import DYNAMIC_INDEX as RUN_TIME

from dialects.winograd import TILES, alpha, tile_grid

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """An operand shape or attribute that the op cannot accept."""


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank)."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalize and sort axes, rejecting duplicates."""
    out = sorted(normalize_axis(a, rank) for a in axes)
    if len(set(out)) != len(out):
        raise ShapeError(f"duplicate axes {list(axes)}")
    return tuple(out)


def _expect_len(name: str, values: Sequence[int], n: int) -> None:
    if len(values) != n:
        raise ShapeError(f"{name} must have {n} values, got {len(values)}")


def broadcast(a: Shape, b: Shape) -> Shape:
    """numpy broadcasting of two shapes."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"shapes {list(a)} and {list(b)} are not broadcastable")
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcasts_to(s: Shape, target: Shape) -> bool:
    """Whether `s` broadcasts unidirectionally to `target`."""
    if len(s) > len(target):
        return False
    return all(a in (1, b) for a, b in zip(s[::-1], target[::-1], strict=False))


def matmul(a: Shape, b: Shape) -> Shape:
    """numpy.matmul result shape (1-D operands, batch broadcasting)."""
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1, a[0]) if len(a) == 1 else a
    b2 = (b[0], 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"matmul contraction mismatch: {list(a)} x {list(b)}")
    batch = broadcast(a2[:-2], b2[:-2])
    out = list(batch + (a2[-2], b2[-1]))
    if len(b) == 1:
        out.pop(-1)
    if len(a) == 1:
        out.pop(-1 if len(b) == 1 else -2)
    return tuple(out)


def gemm(a: Shape, b: Shape, c: Shape | None, trans_a: int, trans_b: int) -> Shape:
    """ONNX Gemm: 2-D operands, c unidirectionally broadcastable to (M, N)."""
    if len(a) != 2 or len(b) != 2:
        raise ShapeError("gemm operands a and b must be 2-D")
    if trans_a not in (0, 1) or trans_b not in (0, 1):
        raise ShapeError("trans_a and trans_b must be 0 or 1")
    m, k = (a[1], a[0]) if trans_a else a
    k2, n = (b[1], b[0]) if trans_b else b
    if k != k2:
        raise ShapeError(f"gemm contraction mismatch: {k} vs {k2}")
    if c is not None and not broadcasts_to(c, (m, n)):
        raise ShapeError(f"gemm c of shape {list(c)} does not broadcast to {[m, n]}")
    return (m, n)


def _window_out(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    eff = (k - 1) * dil + 1
    if size + pad < eff:
        raise ShapeError(f"window of extent {eff} larger than padded input {size + pad}")
    return (size + pad - eff) // stride + 1


def window(
    rank: int, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Strides, pads and dilations of a window op over `rank` spatial dims, an empty list standing
    for the default (ones, zeros, ones): the op's properties do not know the rank."""
    return (
        tuple(strides) or (1,) * rank,
        tuple(pads) or (0,) * (2 * rank),
        tuple(dilations) or (1,) * rank,
    )


def _check_window(
    kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
) -> None:
    """Window parameters (defaults already filled in by `window`) over len(kernel) dims."""
    rank = len(kernel)
    _expect_len("strides", strides, rank)
    _expect_len("pads", pads, 2 * rank)
    _expect_len("dilations", dilations, rank)
    if min(kernel) < 1 or min(strides) < 1 or min(dilations) < 1:
        raise ShapeError("kernel, strides and dilations must be positive")
    if min(pads) < 0:
        raise ShapeError("pads must be non-negative")


def _spatial_rank(x: Shape, what: str) -> int:
    if len(x) < 3:
        raise ShapeError(f"{what} input must have rank >= 3 (N, C, spatial...), got {len(x)}")
    return len(x) - 2


class ConvWindow(NamedTuple):
    """A convolution's window and groups, the properties both conv and conv_nchwc read (an
    empty strides/pads/dilations means the default)."""

    strides: Sequence[int]
    pads: Sequence[int]
    dilations: Sequence[int]
    group: int

    @classmethod
    def of(cls, p: Mapping[str, Any]) -> ConvWindow:
        """The window of a conv op's property values."""
        return cls(p["strides"], p["pads"], p["dilations"], p["group"])


def conv(x: Shape, w: Shape, bias: Shape | None, conv_window: ConvWindow) -> Shape:
    """N-D convolution: (N, C, D1..Dr) input, (M, C/group, k1..kr) weights, pads (begins..., ends...),
    an empty strides/pads/dilations meaning the default."""
    strides, pads, dilations, group = conv_window
    r = _spatial_rank(x, "conv")
    if len(w) != len(x):
        raise ShapeError(
            f"conv weight must have the input's rank {len(x)} (M, C/group, k1..k{r}), got {list(w)}"
        )
    strides, pads, dilations = window(r, strides, pads, dilations)
    _check_window(w[2:], strides, pads, dilations)
    if group < 1 or x[1] % group or w[0] % group:
        raise ShapeError(
            f"group {group} must divide input channels {x[1]} and output channels {w[0]}"
        )
    if w[1] * group != x[1]:
        raise ShapeError(f"weight has {w[1]} input channels per group, expected {x[1] // group}")
    if bias is not None and tuple(bias) != (w[0],):
        raise ShapeError(f"bias must have shape [{w[0]}], got {list(bias)}")
    out = [
        _window_out(x[2 + i], w[2 + i], strides[i], pads[i] + pads[r + i], dilations[i])
        for i in range(r)
    ]
    return (x[0], w[0], *out)


def layout_block(layout: str) -> int:
    """The channel block of a data layout: 0 for "NCHW", b for "NCHW{b}c" (AutoTVM's blocked
    layout: (N, C/b, H, W, b), b channels innermost)."""
    if layout == "NCHW":
        return 0
    body = layout[4:-1] if layout.startswith("NCHW") and layout.endswith("c") else ""
    if not body.isdigit() or int(body) < 1:
        raise ShapeError(f'layout must be "NCHW" or "NCHW<b>c" with a block b >= 1, got "{layout}"')
    return int(body)


def layout_name(block: int) -> str:
    """The inverse of `layout_block`."""
    return "NCHW" if block == 0 else f"NCHW{block}c"


def layout_transform(x: Shape, src: str, dst: str) -> Shape:
    """The shape of a 2-D image tensor moved from layout `src` to `dst` (see `layout_block`)."""
    bs, bd = layout_block(src), layout_block(dst)
    want = 5 if bs else 4
    if len(x) != want:
        raise ShapeError(f"a {src} tensor has rank {want}, got {list(x)}")
    channels = x[1] * bs if bs else x[1]
    if bd and channels % bd:
        raise ShapeError(f"{dst} needs channels divisible by {bd}, got {channels}")
    n, h, w = x[0], x[2], x[3]
    return (n, channels // bd, h, w, bd) if bd else (n, channels, h, w)


def conv_nchwc(x: Shape, w: Shape, bias: Shape | None, conv_window: ConvWindow) -> Shape:
    """2-D convolution in the blocked layout: (N, C/bi, H, W, bi) input, (M/bo, C/group/wi, KH,
    KW, wi, bo) weights (wi = bi, or 1 for a depthwise conv), (M) bias, result (N, M/bo, OH, OW,
    bo). Depthwise (group = C = M, wi = 1, bi = bo) or any group whose channels are whole
    blocks."""
    strides, pads, dilations, group = conv_window
    if len(x) != 5 or len(w) != 6:
        raise ShapeError(
            f"conv_nchwc takes a rank-5 input and rank-6 weights, got {list(x)} and {list(w)}"
        )
    strides, pads, dilations = window(2, strides, pads, dilations)
    _check_window(w[2:4], strides, pads, dilations)
    channels, out_channels = x[1] * x[4], w[0] * w[5]
    if group == channels == out_channels and group > 1:
        if w[1] != 1 or w[4] != 1 or w[5] != x[4]:
            raise ShapeError(
                f"depthwise weights must be (C/b, 1, KH, KW, 1, {x[4]}), got {list(w)}"
            )
    elif group < 1 or x[1] % group or w[0] % group:
        raise ShapeError(
            f"group {group} must divide the {x[1]} input and {w[0]} output channel blocks"
        )
    elif w[1] * w[4] * group != channels or w[4] != x[4]:
        per = " per group" if group > 1 else ""
        raise ShapeError(
            f"weights {list(w)} do not read {x[1] // group} blocks of {x[4]} input channels{per}"
        )
    if bias is not None and tuple(bias) != (out_channels,):
        raise ShapeError(f"bias must have shape [{out_channels}], got {list(bias)}")
    out = [
        _window_out(x[2 + i], w[2 + i], strides[i], pads[i] + pads[2 + i], dilations[i])
        for i in range(2)
    ]
    return (x[0], w[0], *out, w[5])


def winograd_input(x: Shape, tile: int, pads: Sequence[int]) -> Shape:
    """`graph.winograd_input`: a blocked image (N, C/b, H, W, b), padded by `pads` (top, left,
    bottom, right), cut into the (tile+2)^2 input tiles of a 3x3 stride-1 conv with tile x tile
    output tiles and moved to the transform space: ((tile+2)^2, N*TH*TW, C), TH x TW tiles per
    image. The conv's output size must be a whole number of tiles."""
    if len(x) != 5:
        raise ShapeError(f"winograd_input takes a blocked rank-5 image, got {list(x)}")
    if tile not in TILES:
        raise ShapeError(f"winograd tile must be one of {list(TILES)}, got {tile}")
    _expect_len("pads", pads, 4)
    if any(p < 0 for p in pads):
        raise ShapeError(f"pads must be >= 0, got {list(pads)}")
    out = (x[2] + pads[0] + pads[2] - 2, x[3] + pads[1] + pads[3] - 2)
    if min(out) < 1 or out[0] % tile or out[1] % tile:
        raise ShapeError(
            f"the 3x3 conv's output {list(out)} is not a whole number of {tile}x{tile} tiles"
        )
    th, tw = tile_grid(*out, tile)
    return (alpha(tile) ** 2, x[0] * th * tw, x[1] * x[4])


def winograd_output(
    m: Shape, bias: Shape | None, tile: int, image: Sequence[int], block: int
) -> Shape:
    """`graph.winograd_output`: products in the transform space ((tile+2)^2, N*TH*TW, K) back
    to the blocked image (N, K/block, H, W, block) with H x W = `image`, plus the (K) bias. TH x
    TW tiles cover the image; where it is not a whole number of tiles, the last ones are cut."""
    if len(m) != 3:
        raise ShapeError(f"winograd_output takes a rank-3 operand, got {list(m)}")
    if tile not in TILES:
        raise ShapeError(f"winograd tile must be one of {list(TILES)}, got {tile}")
    _expect_len("image", image, 2)
    if m[0] != alpha(tile) ** 2:
        raise ShapeError(
            f"{tile}x{tile} tiles need {alpha(tile) ** 2} transform points, got {m[0]}"
        )
    if min(image) < 1:
        raise ShapeError(f"image must be at least 1x1, got {list(image)}")
    th, tw = tile_grid(image[0], image[1], tile)
    tiles = th * tw
    if m[1] % tiles:
        raise ShapeError(f"{m[1]} tiles are not whole images of {tiles} tiles")
    if block < 1 or m[2] % block:
        raise ShapeError(f"block {block} must divide the {m[2]} channels")
    if bias is not None and tuple(bias) != (m[2],):
        raise ShapeError(f"bias must have shape [{m[2]}], got {list(bias)}")
    return (m[1] // tiles, m[2] // block, image[0], image[1], block)


def pool_out_dim(
    size: int, k: int, stride: int, pad_begin: int, pad_end: int, dil: int, ceil_mode: int
) -> int:
    """Output extent of one pooled dim (ONNX rule: a ceil-mode window must start in the input)."""
    eff = (k - 1) * dil + 1
    span = size + pad_begin + pad_end - eff
    if span < 0:
        raise ShapeError(f"pool window of extent {eff} larger than padded input")
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def pool(
    x: Shape,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: int,
) -> Shape:
    """Window pooling over the spatial dims of an (N, C, D1..Dr) tensor (empty = default)."""
    r = _spatial_rank(x, "pool")
    _expect_len("kernel", kernel, r)
    strides, pads, dilations = window(r, strides, pads, dilations)
    _check_window(kernel, strides, pads, dilations)
    if ceil_mode not in (0, 1):
        raise ShapeError("ceil_mode must be 0 or 1")
    out = [
        pool_out_dim(x[2 + i], kernel[i], strides[i], pads[i], pads[r + i], dilations[i], ceil_mode)
        for i in range(r)
    ]
    return (x[0], x[1], *out)


def global_pool(x: Shape) -> Shape:
    if len(x) < 3:
        raise ShapeError("global pool input must have rank >= 3")
    return tuple(x[:2]) + (1,) * (len(x) - 2)


def reduce(x: Shape, axes: Sequence[int], keepdims: int) -> Shape:
    """Reduction over normalized, sorted axes (empty = all)."""
    if keepdims not in (0, 1):
        raise ShapeError("keepdims must be 0 or 1")
    _check_normalized(axes, len(x))
    red = set(axes) if axes else set(range(len(x)))
    if keepdims:
        return tuple(1 if i in red else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in red)


def _check_normalized(axes: Sequence[int], rank: int) -> None:
    if list(axes) != sorted(set(axes)) or any(not 0 <= a < rank for a in axes):
        raise ShapeError(f"axes {list(axes)} must be sorted, unique and in [0, {rank})")


def check_axis(axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"axis {axis} must be normalized into [0, {rank})")


def flatten(x: Shape, axis: int) -> Shape:
    if not 0 <= axis <= len(x):
        raise ShapeError(f"flatten axis {axis} must be in [0, {len(x)}]")
    return (prod(x[:axis]), prod(x[axis:]))


def squeeze(x: Shape, axes: Sequence[int]) -> Shape:
    _check_normalized(axes, len(x))
    for a in axes:
        if x[a] != 1:
            raise ShapeError(f"cannot squeeze axis {a} of extent {x[a]}")
    return tuple(d for i, d in enumerate(x) if i not in set(axes))


def unsqueeze(x: Shape, axes: Sequence[int]) -> Shape:
    rank = len(x) + len(axes)
    _check_normalized(axes, rank)
    it = iter(x)
    return tuple(1 if i in set(axes) else next(it) for i in range(rank))


def transpose(x: Shape, perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"perm {list(perm)} is not a permutation of {len(x)} dims")
    return tuple(x[p] for p in perm)


def concat(xs: Sequence[Shape], axis: int) -> Shape:
    if not xs:
        raise ShapeError("concat needs at least one input")
    check_axis(axis, len(xs[0]))
    for s in xs[1:]:
        if len(s) != len(xs[0]) or any(
            a != b for i, (a, b) in enumerate(zip(s, xs[0], strict=True)) if i != axis
        ):
            raise ShapeError(f"concat inputs {[list(s) for s in xs]} differ off axis {axis}")
    out = list(xs[0])
    along = [s[axis] for s in xs]
    out[axis] = RUN_TIME if RUN_TIME in along else sum(along)
    return tuple(out)


def split(x: Shape, axis: int, sizes: Sequence[int]) -> list[Shape]:
    check_axis(axis, len(x))
    if sum(sizes) != x[axis] or any(s < 0 for s in sizes):
        raise ShapeError(f"split sizes {list(sizes)} do not add up to extent {x[axis]}")
    return [x[:axis] + (s,) + x[axis + 1 :] for s in sizes]


def slice_extent(start: int, end: int, step: int) -> int:
    """Number of elements of range(start, end, step)."""
    return len(range(start, end, step))


def normalize_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice clamping of (start, end) for one dim; ends stay exclusive (-1 for reverse to 0)."""
    if step == 0:
        raise ShapeError("slice step must not be 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, 0), dim - 1)
        end = min(max(end, -1), dim - 1)
    return start, end


def slice_(x: Shape, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> Shape:
    """Slice with one normalized (start, end, step) per dim."""
    for n, v in (("starts", starts), ("ends", ends), ("steps", steps)):
        _expect_len(n, v, len(x))
    out = []
    for d, s, e, st in zip(x, starts, ends, steps, strict=True):
        if d == RUN_TIME:  # a run-time dim is kept whole
            if (s, e, st) != (0, RUN_TIME, 1):
                raise ShapeError(f"slice ({s}, {e}, {st}) of a run-time dim: only whole ones")
            out.append(RUN_TIME)
            continue
        if st == 0:
            raise ShapeError("slice step must not be 0")
        ok = (0 <= s <= d and 0 <= e <= d) if st > 0 else (0 <= s < max(d, 1) and -1 <= e < d)
        if not ok:
            raise ShapeError(f"slice ({s}, {e}, {st}) is not normalized for extent {d}")
        out.append(slice_extent(s, e, st))
    return tuple(out)


def gather(data: Shape, indices: Shape, axis: int) -> Shape:
    check_axis(axis, len(data))
    return tuple(data[:axis]) + tuple(indices) + tuple(data[axis + 1 :])


def pad(x: Shape, pads: Sequence[int]) -> Shape:
    _expect_len("pads", pads, 2 * len(x))
    out = tuple(d + pads[i] + pads[i + len(x)] for i, d in enumerate(x))
    if any(d < 0 for d in out):
        raise ShapeError(f"pads {list(pads)} make a negative extent")
    return out


def layer_norm(x: Shape, scale: Shape, bias: Shape | None, axis: int) -> Shape:
    check_axis(axis, len(x))
    norm = tuple(x[axis:])
    for name, s in (("scale", scale), ("bias", bias)):
        if s is not None and not broadcasts_to(s, norm):
            raise ShapeError(f"{name} of shape {list(s)} does not broadcast to {list(norm)}")
    return tuple(x)


def batch_norm(x: Shape, params: Sequence[Shape]) -> Shape:
    if len(x) < 2:
        raise ShapeError("batch_norm input must have rank >= 2")
    for s in params:
        if tuple(s) != (x[1],):
            raise ShapeError(f"batch_norm parameters must have shape [{x[1]}], got {list(s)}")
    return tuple(x)


def _run_time_reshape_target(
    x: Shape, shape: Sequence[int], out: list[int], allowzero: int
) -> Shape:
    """reshape_target of an input with run-time dims: each `?` must be copied (0) or be the one
    -1, the static dims must multiply to the same, so every `?` stays one dim."""
    copied = {i for i, d in enumerate(shape) if d == 0 and not allowzero and x[i] == RUN_TIME}
    free = [i for i, d in enumerate(x) if d == RUN_TIME and i not in copied]
    static_in = prod(d for i, d in enumerate(x) if d != RUN_TIME)
    static_out = prod(d for d in out if d not in (RUN_TIME, -1))
    if (
        len(free) != out.count(-1)
        or static_in != static_out
        or any(d < 0 and d not in (RUN_TIME, -1) for d in out)
    ):
        raise ShapeError(
            f"cannot reshape {['?' if d == RUN_TIME else d for d in x]} into {list(shape)}: each run-time dim must be copied "
            "(0) or be the one -1, with the other dims' product unchanged"
        )
    return tuple(RUN_TIME if d == -1 else d for d in out)


def reshape_target(x: Shape, shape: Sequence[int], allowzero: int = 0) -> Shape:
    """ONNX Reshape target: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    if not allowzero and any(d == 0 for d in shape[len(x) :]):
        raise ShapeError(
            f"reshape shape {list(shape)} copies (with 0) a dimension beyond the "
            f"input's rank {len(x)}"
        )
    out = [x[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
    if out.count(-1) > 1:
        raise ShapeError("reshape shape may contain at most one -1")
    if RUN_TIME in x:
        return _run_time_reshape_target(x, shape, out, allowzero)
    if -1 in out:
        known = prod(d for d in out if d != -1)
        if known == 0 or prod(x) % known:
            raise ShapeError(f"cannot reshape {list(x)} into {list(shape)}")
        out[out.index(-1)] = prod(x) // known
    if prod(out) != prod(x) or any(d < 0 for d in out):
        raise ShapeError(f"cannot reshape {list(x)} into {list(shape)}")
    return tuple(out)
