"""Contractions: convolutions (NCHW, NCHW[b]c, Winograd's transforms) and matmul / Gemm, each a
multiply-accumulate linalg.generic over an initialized output (zeros or the broadcast bias)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from dialects import graph as g
from dialects import winograd
from dialects.attributes import WINOGRAD_ATTR
from passes.conversions.convert_graph_to_linalg_builder import (
    Body,
    Emitter,
    Shape,
    broadcast_exprs,
    constant_value,
    dim,
    elem_of,
    identity,
    shape_of,
)
from passes.conversions.graph_to_linalg.table import (
    LoweringTable,
    copy,
    mac,
    out_shape,
    window,
    window_exprs,
)

CONTRACTIONS = LoweringTable()


def bias_init(
    em: Emitter, bias: SSAValue | None, shape: Shape, bmap: list[AffineExpr], elem: Attribute
) -> SSAValue:
    """The accumulator of a convolution: zeros, or `bias` read through `bmap`."""
    if bias is None:
        return em.fill(0.0, shape, elem)
    return em.map_elementwise([bias], shape, copy, [bmap])


# -- convolution ------------------------------------------------------------------------------


def _conv_weights(em: Emitter, w: SSAValue, g: int, r: int) -> SSAValue:
    """(M, ICg, k1..kr) -> (IC, k1..kr, OC), per group (G, ICg, k1..kr, OCg)."""
    m, cg, *ks = shape_of(w)
    ocg = m // g
    wconst = constant_value(w)
    if wconst is not None:
        wg = wconst.reshape(g, ocg, cg, *ks).transpose(0, *range(2, r + 3), 1)
        return em.dense(np.ascontiguousarray(wg[0] if g == 1 else wg))
    if g == 1:  # out (IC, k.., OC) reads w[OC, IC, k..]
        wmap = [dim(r + 1), dim(0), *identity(r, 1)]
        return em.map_elementwise([w], (cg, *ks, m), copy, [wmap])
    wmap = [dim(0), dim(r + 2), dim(1), *identity(r, 2)]
    return em.map_elementwise([em.reshape(w, (g, ocg, cg, *ks))], (g, cg, *ks, ocg), copy, [wmap])


@CONTRACTIONS.register(g.ConvOp)
def _conv(op: g.ConvOp, em: Emitter) -> SSAValue:
    """graph.conv over r spatial dims -> [pad] + bias-broadcast init + one MAC generic.

    Weights are laid out (IC, k1..kr, OC) (per group: (G, ICg, k1..kr, OCg)) so the
    output-channel loop reads them with unit stride; constant weights are transposed at compile
    time.
    """
    x, w, bias = op.x, op.w, op.bias
    xs = shape_of(x)
    r = len(xs) - 2
    strides, pads, dils = window(op, r)
    grp = op.group.value.data
    n = xs[0]
    m, cg, *_ = shape_of(w)
    out = out_shape(op)
    ocg = m // grp
    elem = elem_of(op.result)
    x = em.pad(x, [0, 0, *pads[:r]], [0, 0, *pads[r:]], 0.0)
    xp = shape_of(x)[2:]
    if grp == 1:
        wt = _conv_weights(em, w, grp, r)
        init = bias_init(em, bias, out, [dim(1)], elem)
        # loops: n, oc, o1..or, ic, k1..kr
        ic, k0 = 2 + r, 3 + r
        xmap = [dim(0), dim(ic), *window_exprs(2, k0, strides, dils)]
        wmap = [dim(ic), *identity(r, k0), dim(1)]
        iters = "p" * (2 + r) + "r" * (1 + r)
        return em.generic([x, wt], [xmap, wmap], init, identity(2 + r), iters, mac)
    xg = em.reshape(x, (n, grp, cg, *xp))
    wt = _conv_weights(em, w, grp, r)
    outg = (n, grp, ocg, *out[2:])
    bg = em.reshape(bias, (grp, ocg)) if bias else None
    init = bias_init(em, bg, outg, [dim(1), dim(2)], elem)
    # loops: n, g, ocg, o1..or, icg, k1..kr
    ic, k0 = 3 + r, 4 + r
    xmap = [dim(0), dim(1), dim(ic), *window_exprs(3, k0, strides, dils)]
    wmap = [dim(1), dim(ic), *identity(r, k0), dim(2)]
    iters = "p" * (3 + r) + "r" * (1 + r)
    res = em.generic([xg, wt], [xmap, wmap], init, identity(3 + r), iters, mac)
    return em.reshape(res, out)


@CONTRACTIONS.register(g.ConvNchwcOp)
def _conv_nchwc(op: g.ConvNchwcOp, em: Emitter) -> SSAValue:
    """graph.conv_nchwc -> [pad] + bias-broadcast init + one MAC generic whose innermost loop is
    the output channel block: unit stride in weights and result, an invariant (broadcast) input
    element, whatever the image's width."""
    w, bias = op.w, op.bias
    strides, pads, dils = window(op, 2)
    out = out_shape(op)
    x = em.pad(op.x, [0, 0, *pads[:2], 0], [0, 0, *pads[2:], 0], 0.0)
    elem = elem_of(op.result)
    group = op.group.value.data
    n, cb, hp, wp, bi = shape_of(x)
    mb, cgb, kh, kw, wi, bo = shape_of(w)
    if group == 1:
        init = bias_init(em, bias, out, [dim(1) * bo + dim(4)], elem)
        # loops: n, ob, oh, ow, o | ib, kh, kw, i
        xmap = [dim(0), dim(5), *window_exprs(2, 6, strides, dils), dim(8)]
        wmap = [dim(1), dim(5), dim(6), dim(7), dim(8), dim(4)]
        return em.generic([x, w], [xmap, wmap], init, identity(5), "ppppprrrr", mac)
    if group == cb * bi:  # depthwise, loops: n, cb, oh, ow, c | kh, kw
        init = bias_init(em, bias, out, [dim(1) * bo + dim(4)], elem)
        xmap = [dim(0), dim(1), *window_exprs(2, 5, strides, dils), dim(4)]
        wmap = [dim(1), dim(5), dim(6), dim(4)]
        w = em.reshape(w, (mb, kh, kw, bo))
        return em.generic([x, w], [xmap, wmap], init, identity(5), "ppppprr", mac)
    # whole blocks per group: NCHW's grouped form, blocked; loops: n, g, obg, oh, ow, o |
    # ib, kh, kw, i
    xg = em.reshape(x, (n, group, cb // group, hp, wp, bi))
    wg = em.reshape(w, (group, mb // group, cgb, kh, kw, wi, bo))
    outg = (n, group, mb // group, *out[2:])
    bmap = [dim(1) * (mb // group * bo) + dim(2) * bo + dim(5)]
    init = bias_init(em, bias, outg, bmap, elem)
    xmap = [dim(0), dim(1), dim(6), *window_exprs(3, 7, strides, dils), dim(9)]
    wmap = [dim(1), dim(2), dim(6), dim(7), dim(8), dim(9), dim(5)]
    res = em.generic([xg, wg], [xmap, wmap], init, identity(6), "pppppprrrr", mac)
    return em.reshape(res, out)


# -- Winograd transforms ----------------------------------------------------------------------
# graph.winograd_input / graph.winograd_output -> two separable generics each (a row pass and a
# column pass of the small transform matrices, 2 * (m+2) multiplications per point instead of
# (m+2)^2), on (points, points, N, TH, TW, blocks, b) tensors whose loops run tile-major (the
# matrices' indices innermost) and whose block is the vector lane.


def _winograd_pass(value: SSAValue, half: str) -> SSAValue:
    """Name a row or column pass as half of a Winograd transform (for profiles and logs)."""
    assert isinstance(value.owner, Operation)
    value.owner.attributes[WINOGRAD_ATTR] = StringAttr(half)
    return value


@CONTRACTIONS.register(g.WinogradInputOp)
def _winograd_input(op: g.WinogradInputOp, em: Emitter) -> SSAValue:
    m = op.tile.value.data
    bt = em.dense(winograd.matrices(m)[0].astype(np.float32))
    pads = op.pads.get_values()
    x = em.pad(op.x, [0, 0, pads[0], pads[1], 0], [0, 0, pads[2], pads[3], 0], 0.0)
    n, cb, hp, wp, b = shape_of(x)
    a = winograd.alpha(m)
    th, tw = (hp - 2) // m, (wp - 2) // m
    elem = elem_of(op.result)
    shape = (a, a, n, th, tw, cb, b)
    # rows: t[i, j] = sum_k BT[i, k] x[m*ty + k, m*tx + j]; loops n, ty, tx, cb, i, j, c | k
    out = [dim(4), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
    xmap = [dim(0), dim(3), dim(1) * m + dim(7), dim(2) * m + dim(5), dim(6)]
    rows = em.generic(
        [x, bt], [xmap, [dim(4), dim(7)]], em.fill(0.0, shape, elem), out, "pppppppr", mac
    )
    _winograd_pass(rows, "input")
    # columns: v[i, j] = sum_k t[i, k] BT[j, k]; same loops
    tmap = [dim(4), dim(7), dim(0), dim(1), dim(2), dim(3), dim(6)]
    v = em.generic(
        [rows, bt], [tmap, [dim(5), dim(7)]], em.fill(0.0, shape, elem), out, "pppppppr", mac
    )
    _winograd_pass(v, "input")
    return em.reshape(v, out_shape(op))


@CONTRACTIONS.register(g.WinogradOutputOp)
def _winograd_output(op: g.WinogradOutputOp, em: Emitter) -> SSAValue:
    m = op.tile.value.data
    at = em.dense(winograd.matrices(m)[2].astype(np.float32))
    out = out_shape(op)
    n, kb, h, w, b = out
    a = winograd.alpha(m)
    th, tw = winograd.tile_grid(h, w, m)
    full = (n, kb, th * m, tw * m, b)  # whole tiles; cut to `out` at the end
    elem = elem_of(op.result)
    prods = em.reshape(op.m, (a, a, n, th, tw, kb, b))
    # rows: s[p, j] = sum_i AT[p, i] prods[i, j]; loops n, ty, tx, kb, p, j, c | i
    smap = [dim(4), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
    pmap = [dim(7), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
    rows = em.generic(
        [prods, at],
        [pmap, [dim(4), dim(7)]],
        em.fill(0.0, (m, a, n, th, tw, kb, b), elem),
        smap,
        "pppppppr",
        mac,
    )
    _winograd_pass(rows, "output")
    # columns into the image: y[m*ty + p, m*tx + q] = bias + sum_j s[p, j] AT[q, j];
    # loops n, kb, ty, p, tx, q, c | j
    init = bias_init(em, op.bias, full, [dim(1) * b + dim(4)], elem)
    ymap = [dim(0), dim(1), dim(2) * m + dim(3), dim(4) * m + dim(5), dim(6)]
    smap = [dim(3), dim(7), dim(0), dim(2), dim(4), dim(1), dim(6)]
    y = em.generic([rows, at], [smap, [dim(5), dim(7)]], init, ymap, "pppppppr", mac)
    _winograd_pass(y, "output")
    return y if full == out else em.extract_slice(y, [0] * 5, out, [1] * 5)


# -- matmul / gemm ----------------------------------------------------------------------------


@CONTRACTIONS.register(g.MatmulOp)
def _matmul(op: g.MatmulOp, em: Emitter) -> SSAValue:
    """numpy.matmul as one (batch.., m, n, k) generic."""
    a, b = op.a, op.b
    sa, sb = shape_of(a), shape_of(b)
    out = out_shape(op)
    ba = sa[:-2] if len(sa) >= 2 else ()
    bb = sb[:-2] if len(sb) >= 2 else ()
    nb = max(len(ba), len(bb))
    batch = out[:nb]
    loop = nb
    mi = ni = None
    if len(sa) >= 2:
        mi, loop = loop, loop + 1
    if len(sb) >= 2:
        ni, loop = loop, loop + 1
    ki = loop
    amap = broadcast_exprs(ba, batch) + ([dim(mi)] if mi is not None else []) + [dim(ki)]
    bmap = broadcast_exprs(bb, batch) + [dim(ki)] + ([dim(ni)] if ni is not None else [])
    omap = identity(nb) + [dim(i) for i in (mi, ni) if i is not None]
    iters = "p" * ki + "r"
    init = em.fill(0.0, out, elem_of(op.result))
    return em.generic([a, b], [amap, bmap], init, omap, iters, mac)


@CONTRACTIONS.register(g.GemmOp)
def _gemm(op: g.GemmOp, em: Emitter) -> SSAValue:
    """ONNX Gemm as one (m, n, k) generic; transposes live in the maps."""
    a, b, c = op.a, op.b, op.c
    alpha, beta = op.alpha.value.data, op.beta.value.data
    ta, tb = op.trans_a.value.data, op.trans_b.value.data
    out = out_shape(op)
    run_time = DYNAMIC_INDEX in out  # rows known at run time: C is added after the product,
    # whose rows (A's) size it; the bias alone could not size an accumulator it initialized
    if c is not None and beta != 0.0 and not run_time:
        if beta == 1.0:
            init = em.map_elementwise([c], out, copy)
        else:
            init = em.map_elementwise([c], out, lambda bd, x: bd.mul(x[0], bd.f(beta)))
    else:
        init = em.fill(0.0, out)
    amap = [dim(2), dim(0)] if ta else [dim(0), dim(2)]
    bmap = [dim(1), dim(2)] if tb else [dim(2), dim(1)]

    def body(bd: Body, x: list[SSAValue]) -> SSAValue:
        p = bd.mul(x[0], x[1])
        if alpha != 1.0:
            p = bd.mul(p, bd.f(alpha))
        return bd.add(x[2], p)

    product = em.generic([a, b], [amap, bmap], init, identity(2), "ppr", body)
    if c is None or beta == 0.0 or not run_time:
        return product

    def add_c(bd: Body, x: list[SSAValue]) -> SSAValue:
        return bd.add(x[0], x[1] if beta == 1.0 else bd.mul(x[1], bd.f(beta)))

    return em.map_elementwise([product, c], out, add_c)
