"""Converters of assorted operators (SwiGLU, MelWeightMatrix, MaxUnpool, Col2Im, TensorScatter,
Det), each composed of existing graph ops.

Every shape is static, so the index structure of each operator is a numpy constant built at
import time: a static 0/1 block-to-image matrix (Col2Im), the
permutations of the Leibniz expansion (Det); the run-time indices of MaxUnpool and
TensorScatter become flat positions fed to a Gather (a scatter written as a gather)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i64
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

MAX_DET_SIZE = 4
"""The largest matrix Det expands: the Leibniz expansion has n! terms."""


def _check_size(imp: Importer, total: int, what: str) -> None:
    imp.check_composed(total, f"{what} needs an intermediate of {total} elements")


def _check_float(imp: Importer, x: SSAValue, what: str) -> None:
    if element_type_of(x) != f32:
        raise imp.error(f"needs a float {what}, got element type {element_type_of(x)}")


def _ints(node: onnx.NodeProto, name: str, default: list[int]) -> list[int]:
    v = attrs(node).get(name)
    return default if v is None else [int(d) for d in v]


@converter("SwiGLU")
def convert_swiglu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Y = Swish_alpha(A) * B = A * Sigmoid(alpha * A) * B (the schema's function body); A and B
    have the same shape (no broadcasting)."""
    a_in, b_in = imp.value(node.input[0]), imp.value(node.input[1])
    _check_float(imp, a_in, "input A")
    _check_float(imp, b_in, "input B")
    if imp.shape_of(a_in) != imp.shape_of(b_in):
        raise imp.error(
            f"inputs A {list(imp.shape_of(a_in))} and B {list(imp.shape_of(b_in))} must have "
            "the same shape"
        )
    alpha = float(attrs(node).get("alpha", 1.0))
    scaled = a_in if alpha == 1.0 else imp.op(g.MulOp(a_in, imp.scalar(alpha, like=a_in)))
    gate = imp.op(g.MulOp(a_in, imp.op(g.SigmoidOp(scaled))))
    return [imp.op(g.MulOp(gate, b_in))]


@converter("MelWeightMatrix")
def convert_mel_weight_matrix(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """A matrix computed from its scalar inputs alone: with constant inputs it folds at import
    (before any converter runs), so reaching here means an input is known only at run time,
    which would make the result's shape dynamic."""
    runtime = [n for n in node.input if n and imp.const(n) is None]
    raise imp.error(
        f"all inputs must be constants (computable at import time): the output shape depends "
        f"on them; run-time inputs: {', '.join(repr(n) for n in runtime)}"
    )


def _flat_gather(imp: Importer, data: SSAValue, index: SSAValue) -> SSAValue:
    """data.flat[index] (index any shape, int64)."""
    flat = imp.op(g.ReshapeOp(data, [math.prod(imp.shape_of(data))]))
    return imp.op(g.GatherOp(flat, index, axis=0))


@converter("MaxUnpool")
def convert_max_unpool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The partial inverse of MaxPool: Y.flat[I.flat[k]] = X.flat[k] (the last write wins), zero
    elsewhere, as in the ONNX reference: the indices address the flattened tensor of the
    inferred shape (in - 1) * stride - pads + kernel, which output_shape (a constant) can only
    enlarge, zero-padded at the end. Each index must address its own (n, c) slice, as
    MaxPool's indices do (one outside it is dropped): per slice every output position finds its
    last matching input position by a one-hot comparison, then gathers that value."""
    x = imp.value(node.input[0])
    ind = imp.value(node.input[1])
    _check_float(imp, x, "input X")
    if element_type_of(ind) != i64:
        raise imp.error(f"needs int64 indices I, got element type {element_type_of(ind)}")
    shape = imp.shape_of(x)
    if imp.shape_of(ind) != shape:
        raise imp.error(
            f"indices I {list(imp.shape_of(ind))} must have the shape of X {list(shape)}"
        )
    if len(shape) < 3:
        raise imp.error(f"needs an input of rank >= 3 (N, C, spatial...), got {list(shape)}")
    nsp = len(shape) - 2
    kernel = _ints(node, "kernel_shape", [])
    if len(kernel) != nsp:
        raise imp.error(f"kernel_shape must have {nsp} values, got {kernel}")
    strides = _ints(node, "strides", [1] * nsp)
    pads = _ints(node, "pads", [0] * (2 * nsp))
    if len(strides) != nsp or len(pads) != 2 * nsp:
        raise imp.error(f"strides {strides} / pads {pads} do not fit {nsp} spatial dims")
    inferred = [
        (shape[2 + d] - 1) * strides[d] - pads[d] - pads[nsp + d] + kernel[d] for d in range(nsp)
    ]
    if any(v <= 0 for v in inferred):
        raise imp.error(f"the inferred output spatial shape {inferred} is empty")
    out_shape = [shape[0], shape[1], *inferred]
    if len(node.input) > 2 and node.input[2]:
        req = imp.int_input(node, 2, "output_shape")
        if (
            len(req) != len(shape)
            or req[:2] != list(shape[:2])
            or any(r < v for r, v in zip(req[2:], inferred, strict=True))
        ):
            raise imp.error(
                f"output_shape {req} must keep N, C {list(shape[:2])} and be at least the "
                f"inferred spatial shape {inferred}"
            )
        out_shape = req
    slices = shape[0] * shape[1]
    m, p = math.prod(shape[2:]), math.prod(inferred)
    _check_size(imp, slices * m * p, f"MaxUnpool of {list(shape)} to {inferred}")
    # local position of each index inside its (n, c) slice: [S, m, 1]
    base = (np.arange(slices, dtype=np.int64) * p).reshape(slices, 1, 1)
    local = imp.op(g.SubOp(imp.op(g.ReshapeOp(ind, [slices, m, 1])), imp.constant(base)))
    hit = imp.op(g.EqualOp(local, imp.constant(np.arange(p, dtype=np.int64).reshape(1, 1, p))))
    k = imp.constant(np.arange(m, dtype=np.int64).reshape(1, m, 1))
    last = imp.op(
        g.ReduceMaxOp(imp.op(g.WhereOp(hit, k, imp.constant(np.int64(-1)))), axes=[1], keepdims=0)
    )  # [S, p]: the last k writing there, -1 if none
    found = imp.op(g.GreaterEqualOp(last, imp.constant(np.int64(0))))
    src = imp.op(
        g.AddOp(
            imp.op(g.MaxOp(last, imp.constant(np.int64(0)))),
            imp.constant((np.arange(slices, dtype=np.int64) * m).reshape(slices, 1)),
        )
    )
    y = imp.op(g.WhereOp(found, _flat_gather(imp, x, src), imp.scalar(0, like=x)))
    y = imp.op(g.ReshapeOp(y, [shape[0], shape[1], *inferred]))
    if out_shape[2:] != inferred:
        extra = [o - v for o, v in zip(out_shape[2:], inferred, strict=True)]
        y = imp.op(g.PadOp(y, pads=[0] * (nsp + 2) + [0, 0, *extra]))
    return [y]


@converter("Col2Im")
def convert_col2im(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Sums the column blocks [N, C * prod(block), L] back into images [N, C, *image_shape]
    (torch.nn.Fold): block element b of sliding position l lands at image position
    l * stride - pad_begin + b * dilation, if inside the image. That map is a static 0/1
    matrix [prod(block) * L, prod(image)]; the overlapping sum is one matmul with it."""
    x = imp.value(node.input[0])
    _check_float(imp, x, "input")
    image = imp.int_input(node, 1, "image_shape")
    block = imp.int_input(node, 2, "block_shape")
    nsp = len(image)
    if len(block) != nsp or nsp == 0:
        raise imp.error(f"image_shape {image} and block_shape {block} must have the same length")
    dil = _ints(node, "dilations", [1] * nsp)
    strides = _ints(node, "strides", [1] * nsp)
    pads = _ints(node, "pads", [0] * (2 * nsp))
    if len(dil) != nsp or len(strides) != nsp or len(pads) != 2 * nsp:
        raise imp.error(
            f"dilations {dil} / strides {strides} / pads {pads} do not fit {nsp} spatial dims"
        )
    if min(image + block + dil + strides) <= 0 or min(pads) < 0:
        raise imp.error("image_shape, block_shape, dilations, strides must be positive, pads >= 0")
    shape = imp.shape_of(x)
    positions = [
        (image[d] + pads[d] + pads[nsp + d] - (dil[d] * (block[d] - 1) + 1)) // strides[d] + 1
        for d in range(nsp)
    ]
    kb, nl = math.prod(block), math.prod(positions)
    if len(shape) != 3 or shape[1] % kb or shape[2] != nl or min(positions) <= 0:
        raise imp.error(
            f"input {list(shape)} must be [N, C * {kb}, {nl}] for block_shape {block} over "
            f"image_shape {image}"
        )
    npix = math.prod(image)
    _check_size(imp, kb * nl * npix, f"Col2Im of blocks {block} into {image}")
    # per dim: pos[d][b, l] = l * stride - pad + b * dilation, broadcast over all dims
    rows = np.zeros((kb, nl, npix), dtype=np.float32)
    b_idx = np.indices(block).reshape(nsp, kb, 1)
    l_idx = np.indices(positions).reshape(nsp, 1, nl)
    flat = np.zeros((kb, nl), dtype=np.int64)
    inside = np.ones((kb, nl), dtype=bool)
    for d in range(nsp):
        pos = l_idx[d] * strides[d] - pads[d] + b_idx[d] * dil[d]
        inside &= (pos >= 0) & (pos < image[d])
        flat = flat * image[d] + pos
    bb, ll = np.nonzero(inside)
    rows[bb, ll, flat[bb, ll]] = 1.0
    n, c = shape[0], shape[1] // kb
    cols = imp.op(g.ReshapeOp(x, [n, c, kb * nl]))
    y = imp.op(g.MatmulOp(cols, imp.constant(rows.reshape(kb * nl, npix))))
    return [imp.op(g.ReshapeOp(y, [n, c, *image]))]


@converter("TensorScatter")
def convert_tensor_scatter(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Writes `update` into `past_cache` along `axis` from write_indices[batch] on (modulo the
    axis length if mode is circular); positions beyond the axis are dropped in linear mode.
    As a gather: each output position along the axis reads the update at j - write_index when
    that is in range, else the cache, from the flat concatenation of the two."""
    a = attrs(node)
    mode = text(a.get("mode", "linear"))
    if mode not in ("linear", "circular"):
        raise imp.error(f"mode '{mode}' is not supported (linear or circular)")
    past = imp.value(node.input[0])
    upd = imp.value(node.input[1])
    shape, ushape = imp.shape_of(past), imp.shape_of(upd)
    rank = len(shape)
    if rank < 2:
        raise imp.error(f"needs a cache of rank >= 2, got {list(shape)}")
    axis = int(a.get("axis", -2))
    if not -rank < axis < rank or S.normalize_axis(axis, rank) == 0:
        raise imp.error(f"axis {axis} must name a dimension other than the batch dimension 0")
    axis = S.normalize_axis(axis, rank)
    if element_type_of(upd) != element_type_of(past):
        raise imp.error("update must have the element type of past_cache")
    big, s = shape[axis], ushape[axis] if len(ushape) == rank else -1
    if (
        len(ushape) != rank
        or any(u != c for d, (u, c) in enumerate(zip(ushape, shape, strict=True)) if d != axis)
        or s > big
    ):
        raise imp.error(
            f"update {list(ushape)} must match past_cache {list(shape)} except along axis "
            f"{axis}, where it may be no longer"
        )
    batch = shape[0]
    if len(node.input) > 2 and node.input[2]:
        w = imp.value(node.input[2])
        if element_type_of(w) != i64 or imp.shape_of(w) != (batch,):
            raise imp.error(f"write_indices must be int64 of shape [{batch}]")
    else:
        w = imp.constant(np.zeros(batch, dtype=np.int64))
    wb = imp.op(g.ReshapeOp(w, [batch] + [1] * (rank - 1)))
    j = np.arange(big, dtype=np.int64).reshape([big if d == axis else 1 for d in range(rank)])
    if mode == "circular":  # (j - w) mod big for w >= 0
        wm = imp.op(
            g.SubOp(
                wb,
                imp.op(
                    g.MulOp(
                        imp.op(g.DivOp(wb, imp.constant(np.int64(big)))),
                        imp.constant(np.int64(big)),
                    )
                ),
            )
        )
        diff = imp.op(g.SubOp(imp.constant(j), wm))
        neg = imp.op(g.LessOp(diff, imp.constant(np.int64(0))))
        src = imp.op(g.WhereOp(neg, imp.op(g.AddOp(diff, imp.constant(np.int64(big)))), diff))
    else:
        src = imp.op(g.SubOp(imp.constant(j), wb))
    ok = imp.op(
        g.AndOp(
            imp.op(g.GreaterEqualOp(src, imp.constant(np.int64(0)))),
            imp.op(g.LessOp(src, imp.constant(np.int64(s)))),
        )
    )
    # flat position in update of (prefix, src, suffix) and in past of the output position
    inner = math.prod(shape[axis + 1 :])
    own = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    ubase = np.indices(shape, dtype=np.int64)
    uflat = np.zeros(shape, dtype=np.int64)
    for d in range(rank):
        uflat = uflat * ushape[d] + (0 if d == axis else ubase[d])
    uflat += math.prod(shape)  # the update follows the cache in the concatenation
    upos = imp.op(g.AddOp(imp.constant(uflat), imp.op(g.MulOp(src, imp.constant(np.int64(inner))))))
    idx = imp.op(g.WhereOp(ok, upos, imp.constant(own)))
    data = imp.op(
        g.ConcatOp(
            [
                imp.op(g.ReshapeOp(past, [math.prod(shape)])),
                imp.op(g.ReshapeOp(upd, [math.prod(ushape)])),
            ],
            axis=0,
        )
    )
    return [imp.op(g.GatherOp(data, idx, axis=0))]


@converter("Det")
def convert_det(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Determinants of [..., n, n] matrices by the Leibniz expansion: the sum over the n!
    permutations p of sign(p) * prod_i x[i, p(i)], as a static Gather of the n! x n entries,
    a ReduceProd and a signed ReduceSum. Exact and branch-free, but factorial: n <= 4."""
    x = imp.value(node.input[0])
    _check_float(imp, x, "input")
    shape = imp.shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise imp.error(f"needs square matrices [..., n, n], got {list(shape)}")
    n = shape[-1]
    if not 1 <= n <= MAX_DET_SIZE:
        raise imp.error(
            f"matrices of size {n}x{n} are not supported (the cofactor expansion is exact "
            f"for 1x1 up to {MAX_DET_SIZE}x{MAX_DET_SIZE})"
        )
    perms = list(itertools.permutations(range(n)))
    pos = np.array([[i * n + p[i] for i in range(n)] for p in perms], dtype=np.int64)
    sign = np.array(
        [
            (-1.0) ** sum(1 for a, b in itertools.combinations(range(n), 2) if p[a] > p[b])
            for p in perms
        ],
        dtype=np.float32,
    )
    batch = list(shape[:-2])
    flat = imp.op(g.ReshapeOp(x, [*batch, n * n]))
    terms = imp.op(g.GatherOp(flat, imp.constant(pos), axis=len(batch)))  # [..., n!, n]
    prods = imp.op(g.ReduceProdOp(terms, axes=[len(batch) + 1], keepdims=0))
    signed = imp.op(g.MulOp(prods, imp.constant(sign)))
    return [imp.op(g.ReduceSumOp(signed, axes=[len(batch)], keepdims=0))]
