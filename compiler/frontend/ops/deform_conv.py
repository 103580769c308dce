"""DeformConv (opsets 19 and 22), composed of graph ops.

A deformable convolution reads every kernel tap at its regular position moved by a learned,
run-time offset, so its "im2col" tensor cannot be a static gather: per spatial axis, the tap's
coordinate (static base position + offset) is split into its two neighbouring integer positions
and their linear weights, elementwise at run time, as GridSample does with align_corners=1 and
zero padding (which is how onnx's reference implementation, op_deform_conv.py, samples; it
generated the node tests). Every combination of one neighbour per axis is one graph.gather of
the flattened input (rows of the offset group's channels) at the summed flat index, scaled by
the product of the axes' weights, the neighbours' in-range flags (outside reads contribute 0)
and the mask. Summed over the neighbours, that is the sampled im2col tensor
(N, C * prod(kernel), prod(out)), and the convolution is one batched matmul per group with W,
plus the bias. The spatial axes are handled generally (1-D, 2-D, 3-D, ...); onnx's reference
implements 2-D only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from compiler.frontend.importer import Importer, Value, attrs, converter, element_type_of
from dialects import graph as g


def _ints(imp: Importer, a: dict[str, Any], name: str, default: list[int]) -> list[int]:
    """An INTS attribute with as many entries as `default`, or the default when absent."""
    if name not in a:
        return default
    v = [int(x) for x in a[name]]
    if len(v) != len(default):
        raise imp.error(f"{name} must have {len(default)} values, got {v}")
    return v


@converter("DeformConv")
def convert_deform_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    names = list(node.input) + [""] * (5 - len(node.input))
    x, w, off = (imp.value(names[i]) for i in range(3))
    b = imp.value(names[3]) if names[3] else None
    m = imp.value(names[4]) if names[4] else None
    for what, v in (("X", x), ("W", w), ("offset", off), ("B", b), ("mask", m)):
        if v is not None and element_type_of(v) != f32:
            raise imp.error(f"{what} must be a float tensor, got {element_type_of(v)}")

    xs, ws, offs = imp.shape_of(x), imp.shape_of(w), imp.shape_of(off)
    r = len(xs) - 2
    if r < 1:
        raise imp.error(f"X must have rank >= 3 (N, C, spatial...), got shape {list(xs)}")
    if len(ws) != r + 2:
        raise imp.error(f"W must have rank {r + 2} like X, got shape {list(ws)}")
    n, c, dims = xs[0], xs[1], list(xs[2:])
    oc, kernel = ws[0], list(ws[2:])
    group = int(a.get("group", 1))
    offset_group = int(a.get("offset_group", 1))
    if group < 1 or offset_group < 1:
        raise imp.error(f"group and offset_group must be >= 1, got {group} and {offset_group}")
    if "kernel_shape" in a and [int(k) for k in a["kernel_shape"]] != kernel:
        raise imp.error(
            f"kernel_shape {[int(k) for k in a['kernel_shape']]} does not match W's spatial "
            f"shape {kernel}"
        )
    strides = _ints(imp, a, "strides", [1] * r)
    dilations = _ints(imp, a, "dilations", [1] * r)
    pads = _ints(imp, a, "pads", [0] * (2 * r))
    if min(strides) < 1 or min(dilations) < 1:
        raise imp.error(f"strides and dilations must be >= 1, got {strides} and {dilations}")
    if ws[1] * group != c or oc % group != 0:
        raise imp.error(
            f"W of shape {list(ws)} does not fit X of shape {list(xs)} with group={group}: "
            "W.shape[1] * group must be C and W.shape[0] divisible by group"
        )
    if c % offset_group != 0:
        raise imp.error(f"C ({c}) must be divisible by offset_group ({offset_group})")
    # the output sizes as the reference computes them (truncating a true division)
    extents = [(kernel[i] - 1) * dilations[i] + 1 for i in range(r)]
    out = [int((dims[i] + pads[i] + pads[r + i] - extents[i]) / strides[i] + 1) for i in range(r)]
    if min(out) < 0:
        raise imp.error(
            f"the dilated kernel {extents} is larger than the padded input {dims} (pads {pads})"
        )
    k_total = math.prod(kernel)
    if list(offs) != [n, offset_group * k_total * r, *out]:
        raise imp.error(
            f"offset must have shape {[n, offset_group * k_total * r, *out]} (N, offset_group * "
            f"prod(kernel) * {r}, output sizes from pads, strides and dilations), got {list(offs)}"
        )
    if m is not None and list(imp.shape_of(m)) != [n, offset_group * k_total, *out]:
        raise imp.error(
            f"mask must have shape {[n, offset_group * k_total, *out]}, got {list(imp.shape_of(m))}"
        )
    if b is not None and list(imp.shape_of(b)) != [oc]:
        raise imp.error(f"B must have shape [{oc}], got {list(imp.shape_of(b))}")

    result_shape = [n, oc, *out]
    if 0 in result_shape:
        return [np.zeros(result_shape, np.float32)]
    if 0 in xs or k_total == 0:  # nothing to sample: every output is the bias
        if b is None:
            return [np.zeros(result_shape, np.float32)]
        return [imp.op(g.ExpandOp(imp.op(g.ReshapeOp(b, [oc] + [1] * r)), shape=result_shape))]

    cols = _sampled_columns(imp, x, off, m, offset_group, kernel, strides, dilations, pads, out)
    # (N, OG, K, P, Cg) -> (N, C, K, P) -> per group (N, G, C/G * K, P), matching W's layout
    p_total = math.prod(out)
    cols = imp.op(g.TransposeOp(cols, perm=[0, 1, 4, 2, 3]))
    cols = imp.op(g.ReshapeOp(cols, [n, group, c // group * k_total, p_total]))
    wg = imp.op(g.ReshapeOp(w, [group, oc // group, c // group * k_total]))
    y = imp.op(g.MatmulOp(wg, cols))  # (N, G, oC/G, P)
    y = imp.op(g.ReshapeOp(y, result_shape))
    if b is not None:
        y = imp.op(g.AddOp(y, imp.op(g.ReshapeOp(b, [oc] + [1] * r))))
    return [y]


def _sampled_columns(
    imp: Importer,
    x: SSAValue,
    off: SSAValue,
    mask: SSAValue | None,
    offset_group: int,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads: list[int],
    out: list[int],
) -> SSAValue:
    """X sampled at every (kernel tap, output position), scaled by the mask: shaped
    (N, offset_group, K, P, C / offset_group) for K = prod(kernel), P = prod(out)."""
    xs = imp.shape_of(x)
    n, c, dims = xs[0], xs[1], list(xs[2:])
    r = len(dims)
    og, cg = offset_group, c // offset_group
    k_total, p_total, size = math.prod(kernel), math.prod(out), math.prod(dims)
    lead = [n, og, k_total, p_total]
    ones = [1] * r
    imp.check_elements([*lead, 2**r, cg], "the sampled input (2 neighbours per spatial axis)")

    # X as rows of an offset group's channels: (N * OG * prod(dims), Cg)
    rows = imp.op(g.ReshapeOp(x, [n * og, cg, size]))
    rows = imp.op(g.ReshapeOp(imp.op(g.TransposeOp(rows, perm=[0, 2, 1])), [n * og * size, cg]))
    # per axis, the offsets (N, OG, K, P, 1): the offset channels are (OG, *kernel, r)
    offs = imp.op(g.ReshapeOp(off, [n, og, k_total, r, p_total]))
    pieces = list(imp.emit(g.SplitOp(offs, axis=3, sizes=[1] * r)).results) if r > 1 else [offs]

    flat: SSAValue = imp.op(
        g.ConstantOp((np.arange(n * og, dtype=np.int64) * size).reshape(n, og, 1, 1, *ones))
    )
    weight: SSAValue | None = None
    taps = imp.op(g.ConstantOp(np.asarray([0.0, 1.0], np.float32)))
    kpos = np.indices(kernel).reshape(r, k_total)  # per axis, each kernel tap's index
    opos = np.indices(out).reshape(r, p_total)  # per axis, each output position's index
    for i, length in enumerate(dims):
        # the regular position of tap k at output p (the reference's base + kernel position)
        base = kpos[i][:, None] * dilations[i] + opos[i][None, :] * strides[i] - pads[i]
        base_c = imp.op(g.ConstantOp(base.astype(np.float32).reshape(1, 1, k_total, p_total, 1)))
        pos = imp.op(g.AddOp(imp.op(g.ReshapeOp(pieces[i], [*lead, 1])), base_c))
        # its two neighbours (N, OG, K, P, 2) and their linear weights
        x0 = imp.op(g.FloorOp(pos))
        frac = imp.op(g.SubOp(pos, x0))
        idx = imp.op(g.AddOp(x0, taps))
        wi = imp.op(g.SubOp(imp.scalar(1.0), imp.op(g.AbsOp(imp.op(g.SubOp(frac, taps))))))
        inside = imp.op(
            g.AndOp(
                imp.op(g.GreaterEqualOp(idx, imp.scalar(0.0))),
                imp.op(g.LessEqualOp(idx, imp.scalar(length - 1.0))),
            )
        )
        # an outside neighbour (NaN and huge offsets included) reads row 0 with weight 0
        wi = imp.op(g.WhereOp(inside, wi, imp.scalar(0.0)))
        ii = imp.op(g.CastOp(imp.op(g.WhereOp(inside, idx, imp.scalar(0.0))), to="i64"))
        stride = math.prod(dims[i + 1 :])
        if stride != 1:
            ii = imp.op(g.MulOp(ii, imp.op(g.ConstantOp(np.asarray(stride, np.int64)))))
        tap_shape = [*lead, *[2 if j == i else 1 for j in range(r)]]
        flat = imp.op(g.AddOp(flat, imp.op(g.ReshapeOp(ii, tap_shape))))
        wi = imp.op(g.ReshapeOp(wi, tap_shape))
        weight = wi if weight is None else imp.op(g.MulOp(weight, wi))
    assert weight is not None
    if mask is not None:
        weight = imp.op(g.MulOp(weight, imp.op(g.ReshapeOp(mask, [*lead, *ones]))))

    picked = imp.op(g.GatherOp(rows, flat, axis=0))  # (N, OG, K, P, 2..., Cg)
    picked = imp.op(g.MulOp(picked, imp.op(g.ReshapeOp(weight, [*lead, *[2] * r, 1]))))
    return imp.op(g.ReduceSumOp(picked, axes=list(range(4, 4 + r)), keepdims=0))
