"""Reductions and what is built on them: ReduceMean/Sum/Prod/Max, global and window pooling,
Softmax/LogSoftmax, LayerNorm and inference BatchNorm."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from dialects import graph as g
from passes.conversions.convert_graph_to_linalg_builder import (
    NEG_INF,
    Body,
    Emitter,
    Shape,
    broadcast_exprs,
    dim,
    elem_of,
    identity,
    shape_of,
)
from passes.conversions.graph_to_linalg.table import (
    Lowering,
    LoweringTable,
    out_shape,
    window,
    window_exprs,
)

REDUCTIONS = LoweringTable()


def _scale(em: Emitter, x: SSAValue, shape: Shape, factor: float) -> SSAValue:
    """x * factor, elementwise."""
    return em.map_elementwise([x], shape, lambda b, a: b.mul(a[0], b.f(factor)))


# -- reductions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reduction:
    """A reduction op's kind ("sum", "prod" or "max"), whether it averages, and whether it
    reduces the spatial dims (a global pool) rather than its `axes`."""

    kind: str
    mean: bool = False
    spatial: bool = False

    def __call__(self, op: Operation, em: Emitter) -> SSAValue:
        """One reduction generic (+ scale) + keepdims reshape."""
        x = op.operands[0]
        s = shape_of(x)
        if self.spatial:
            axes: list[int] = list(range(2, len(s)))
        else:
            assert isinstance(op, g.ReduceOp)
            axes = list(op.axes.get_values()) or list(range(len(s)))
        res = em.reduce(x, axes, self.kind)
        if self.mean:
            res = _scale(em, res, shape_of(res), 1.0 / prod(s[a] for a in axes))
        return em.reshape(res, out_shape(op))


REDUCTIONS.update(
    {
        g.ReduceMeanOp: _Reduction("sum", mean=True),
        g.ReduceSumOp: _Reduction("sum"),
        g.ReduceProdOp: _Reduction("prod"),
        g.ReduceMaxOp: _Reduction("max"),
        g.GlobalAvgPoolOp: _Reduction("sum", mean=True, spatial=True),
        g.GlobalMaxPoolOp: _Reduction("max", spatial=True),
    }
)


# -- normalizations ---------------------------------------------------------------------------


def _softmax_out(b: Body, a: list[SSAValue]) -> SSAValue:
    """exp(x - max) / sum."""
    return b.div(a[0], a[1])


def _log_softmax_out(b: Body, a: list[SSAValue]) -> SSAValue:
    """x - max - log(sum)."""
    return b.sub(b.sub(a[0], a[1]), b.log(a[2]))


def _softmax(log: bool) -> Lowering[g.SoftmaxBase]:
    """Softmax (or LogSoftmax) along the op's axis, max-subtracted."""

    def lower(op: g.SoftmaxBase, em: Emitter) -> SSAValue:
        x = op.x
        s = shape_of(x)
        axes = [op.axis.value.data]
        ident, red = identity(len(s)), em.reduced_exprs(len(s), axes)
        mx = em.reduce(x, axes, "max")
        e = em.map_elementwise([x, mx], s, lambda b, a: b.exp(b.sub(a[0], a[1])), [ident, red])
        total = em.reduce(e, axes, "sum")
        if log:
            return em.map_elementwise([x, mx, total], s, _log_softmax_out, [ident, red, red])
        return em.map_elementwise([e, total], s, _softmax_out, [ident, red])

    return lower


REDUCTIONS[g.SoftmaxOp] = _softmax(log=False)
REDUCTIONS[g.LogSoftmaxOp] = _softmax(log=True)


@REDUCTIONS.register(g.BatchNormOp)
def _batch_norm(op: g.BatchNormOp, em: Emitter) -> SSAValue:
    """(x - mean) / sqrt(var + eps) * scale + bias, the parameters per channel (dim 1)."""
    x = op.x
    s = shape_of(x)
    eps = op.epsilon.value.data
    ident, pm = identity(len(s)), [dim(1)]

    def bn(b: Body, a: list[SSAValue]) -> SSAValue:
        xn = b.div(b.sub(a[0], a[3]), b.sqrt(b.add(a[4], b.f(eps))))
        return b.add(b.mul(xn, a[1]), a[2])

    ins = [x, op.scale, op.bias, op.mean, op.var]
    return em.map_elementwise(ins, s, bn, [ident, pm, pm, pm, pm])


@REDUCTIONS.register(g.LayerNormOp)
def _layer_norm(op: g.LayerNormOp, em: Emitter) -> SSAValue:
    """Normalize over the dims from `axis` on (two passes: mean, then variance)."""
    x = op.x
    s = shape_of(x)
    rank = len(s)
    eps = op.epsilon.value.data
    axis = op.axis.value.data
    axes = list(range(axis, rank))
    inv_n = 1.0 / prod(s[axis:])
    ident, red = identity(rank), em.reduced_exprs(rank, axes)
    total = em.reduce(x, axes, "sum")
    d = em.map_elementwise(
        [x, total], s, lambda b, a: b.sub(a[0], b.mul(a[1], b.f(inv_n))), [ident, red]
    )
    var = em.reduce(d, axes, "sum", pre=lambda b, v: b.mul(v, v))
    params = list(op.operands[1:])

    def ln(b: Body, a: list[SSAValue]) -> SSAValue:
        y = b.div(a[0], b.sqrt(b.add(b.mul(a[1], b.f(inv_n)), b.f(eps))))
        y = b.mul(y, a[2])
        return b.add(y, a[3]) if len(a) > 3 else y

    maps = [ident, red] + [broadcast_exprs(shape_of(p), s) for p in params]
    return em.map_elementwise([d, var, *params], s, ln, maps)


# -- window pooling ---------------------------------------------------------------------------


def _avg_divisors(
    op: g.AvgPoolOp, kernel: Shape, strides: Shape, pads: Shape, dils: Shape
) -> np.ndarray:
    """Per output position, the window taps that are counted: those in the input (or in the
    explicit padding, with count_include_pad), dilation included."""
    xs, osp = shape_of(op.x), out_shape(op)[2:]
    r = len(osp)
    include = op.count_include_pad.value.data

    def counts(i: int) -> np.ndarray:
        lo, hi = pads[i], pads[r + i]
        size = xs[2 + i]
        lo_lim, hi_lim = (-lo, size + hi) if include else (0, size)
        taps = np.arange(osp[i])[:, None] * strides[i] - lo + np.arange(kernel[i]) * dils[i]
        return ((taps >= lo_lim) & (taps < hi_lim)).sum(axis=1).astype(np.float32)

    div = np.ones((), np.float32)
    for i in range(r):
        div = np.multiply.outer(div, counts(i))
    return div


@REDUCTIONS.register(g.MaxPoolOp, g.AvgPoolOp)
def _pool(op: g.PoolOp, em: Emitter) -> SSAValue:
    """MaxPool/AvgPool over r spatial dims: pad (incl. ceil-mode overhang) + a
    (n, c, o1..or, k1..kr) generic.

    A tensor.empty of the window shape is a body-unused input that gives the window loops their
    extents (as MLIR's named pooling ops do). Average divisors are computed with numpy at
    compile time.
    """
    x = op.operands[0]
    xs = shape_of(x)
    r = len(xs) - 2
    kernel = op.kernel.get_values()
    strides, pads, dils = window(op, r)
    out = out_shape(op)
    is_max = isinstance(op, g.MaxPoolOp)
    extra = [
        max(0, (o - 1) * s + d * (k - 1) + 1 - (size + lo + hi))
        for o, s, d, k, size, lo, hi in zip(
            out[2:], strides, dils, kernel, xs[2:], pads[:r], pads[r:], strict=True
        )
    ]
    elem = elem_of(x)
    fill_value = NEG_INF if is_max else 0.0
    his = [hi + e for hi, e in zip(pads[r:], extra, strict=True)]
    xp = em.pad(x, [0, 0, *pads[:r]], [0, 0, *his], fill_value)
    window_shape = em.empty(tuple(kernel))
    xmap = [dim(0), dim(1), *window_exprs(2, 2 + r, strides, dils)]
    init = em.fill(fill_value, out, elem)

    def body(b: Body, a: list[SSAValue]) -> SSAValue:
        return b.max(a[2], a[0]) if is_max else b.add(a[2], a[0])

    iters = "p" * (2 + r) + "r" * r
    wmap = identity(r, 2 + r)
    res = em.generic([xp, window_shape], [xmap, wmap], init, identity(2 + r), iters, body)
    if not isinstance(op, g.AvgPoolOp):
        return res
    div = _avg_divisors(op, kernel, strides, pads, dils)
    if np.all(div == div.flat[0]):
        return _scale(em, res, out, float(1.0 / div.flat[0]))
    recip = em.dense((1.0 / div).astype(np.float32))
    maps: list[list[AffineExpr]] = [identity(2 + r), identity(r, 2)]
    return em.map_elementwise([res, recip], out, lambda b, a: b.mul(a[0], a[1]), maps)
