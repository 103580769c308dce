"""convert-graph-to-linalg: lower every `graph` op to the TENSOR level (levels.md).

Every computation becomes a `linalg.generic` (no named linalg ops), so the loop generator has a
single input form whose access strides it can read off the indexing maps. Data movement uses
tensor.{empty,extract_slice,insert_slice,expand_shape,collapse_shape}; weights stay dense
`arith.constant`s. Patterns dispatch on the operation name (not the Python class), so they
only depend on the `graph` spec: operand order and attribute names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import isfinite, prod, sqrt
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import DiagnosticException

from dialects import winograd
from dialects.attributes import WINOGRAD_ATTR
from dialects.graph_shapes import layout_block
from passes.conversions.convert_graph_to_linalg_builder import (
    NEG_INF,
    Body,
    Emitter,
    broadcast_exprs,
    constant_value,
    cst,
    dim,
    elem_of,
    identity,
    is_float,
    shape_of,
)

# -- attribute access (properties or attributes, per the spec's names) --------------------------


def _attr(op: Operation, name: str) -> object | None:
    a = op.properties.get(name)
    return op.attributes.get(name) if a is None else a


def _ints(op: Operation, name: str, default: Sequence[int] = ()) -> tuple[int, ...]:
    a = _attr(op, name)
    if a is None:
        return tuple(default)
    if isinstance(a, DenseArrayBase):
        return tuple(int(v) for v in a.get_values())
    if isinstance(a, ArrayAttr):
        return tuple(_number(op, name, v) for v in a.data)
    raise TypeError(f"{op.name}: attribute {name} is not an integer list: {a}")


def _number(op: Operation, name: str, a: object) -> int:
    """An integer (or float) attribute's value as an int."""
    if isinstance(a, IntegerAttr | FloatAttr):
        return int(a.value.data)
    raise TypeError(f"{op.name}: attribute {name} is not a number: {a}")


def _int(op: Operation, name: str, default: int = 0) -> int:
    a = _attr(op, name)
    return default if a is None else _number(op, name, a)


def _float(op: Operation, name: str, default: float) -> float:
    a = _attr(op, name)
    if a is None:
        return default
    if isinstance(a, FloatAttr | IntegerAttr):
        return float(a.value.data)
    raise TypeError(f"{op.name}: attribute {name} is not a number: {a}")


def _str(op: Operation, name: str, default: str) -> str:
    a = _attr(op, name)
    return a.data if isinstance(a, StringAttr) else default


def _out_shape(op: Operation, i: int = 0) -> tuple[int, ...]:
    return shape_of(op.results[i])


class _GraphLowering(RewritePattern):
    """Base: dispatch to `lower_<op suffix>`; subclasses list the op names they own."""

    ops: ClassVar[tuple[str, ...]] = ()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.name not in self.ops:
            return
        em = Emitter()
        results = self.lower(op, em)
        rewriter.replace(op, em.ops, list(results))

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        raise NotImplementedError


# -- constants ------------------------------------------------------------------------------------


class ConstantLowering(_GraphLowering):
    """graph.constant / graph.shape -> arith.constant (same dense payload)."""

    ops = ("graph.constant", "graph.shape")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        if op.name == "graph.shape":
            return [em.dense(np.array(shape_of(op.operands[0]), dtype=np.int64))]
        value = _attr(op, "value")
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise DiagnosticException(f"{op.name}: value {value} is not a dense tensor")
        return [em.add(arith.ConstantOp(value))]


# -- elementwise ------------------------------------------------------------------------------------


def _compare(pred: str) -> Callable[[Body, SSAValue, SSAValue], SSAValue]:
    return lambda b, x, y: b.compare(pred, x, y)


_BINARY: dict[str, Callable[[Body, SSAValue, SSAValue], SSAValue]] = {
    "graph.add": Body.add,
    "graph.sub": Body.sub,
    "graph.mul": Body.mul,
    "graph.div": Body.div,
    "graph.pow": lambda b, x, y: b.op(xmath.PowFOp(x, y)),
    "graph.max": Body.max,
    "graph.min": Body.min,
    "graph.equal": _compare("eq"),
    "graph.less": _compare("lt"),
    "graph.less_equal": _compare("le"),
    "graph.greater": _compare("gt"),
    "graph.greater_equal": _compare("ge"),
    "graph.and": lambda b, x, y: b.op(arith.AndIOp(x, y)),
    "graph.or": lambda b, x, y: b.op(arith.OrIOp(x, y)),
    "graph.xor": lambda b, x, y: b.op(arith.XOrIOp(x, y)),
    "graph.shift_left": lambda b, x, y: b.op(arith.ShLIOp(x, y)),
    "graph.shift_right": lambda b, x, y: b.op(arith.ShRSIOp(x, y)),
}

_SQRT1_2 = 1.0 / sqrt(2.0)
_SQRT_2_PI = sqrt(2.0 / np.pi)


def _unary_body(op: Operation) -> Callable[[Body, SSAValue], SSAValue]:
    """The scalar math of a unary graph op (attributes read once, at rewrite time)."""
    n = op.name
    if n == "graph.sqrt":
        return Body.sqrt
    if n in _MATH_UNARY:
        math_op = _MATH_UNARY[n]
        return lambda b, x: b.op(math_op(x))
    if n == "graph.exp":
        return Body.exp
    if n == "graph.log":
        return Body.log
    if n == "graph.neg":
        return Body.neg
    if n == "graph.not":
        return lambda b, x: b.op(arith.XOrIOp(x, b.const(-1, x)))  # all ones (bool: 1)
    if n == "graph.abs":
        return lambda b, x: b.op(xmath.AbsFOp(x)) if is_float(x.type) else b.max(x, b.neg(x))
    if n == "graph.reciprocal":
        return lambda b, x: b.div(b.f(1.0), x)
    if n == "graph.relu":
        return lambda b, x: b.max(x, b.const(0, x))
    if n == "graph.sigmoid":
        return lambda b, x: b.div(b.f(1.0), b.add(b.f(1.0), b.exp(b.neg(x))))
    if n == "graph.tanh":
        return Body.tanh
    if n == "graph.erf":
        return Body.erf
    if n == "graph.hard_swish":
        return lambda b, x: b.mul(
            x, b.max(b.f(0.0), b.min(b.f(1.0), b.add(b.mul(x, b.f(1.0 / 6.0)), b.f(0.5))))
        )
    if n == "graph.hard_sigmoid":
        alpha, beta = _float(op, "alpha", 0.2), _float(op, "beta", 0.5)
        return lambda b, x: b.max(b.f(0.0), b.min(b.f(1.0), b.add(b.mul(x, b.f(alpha)), b.f(beta))))
    if n == "graph.leaky_relu":
        alpha = _float(op, "alpha", 0.01)
        # max(x, 0) + alpha * min(x, 0), not select(x < 0, ...): xDSL's arith.cmpf verifies only
        # scalar i1 results, so a compare in the body breaks once the loop is vectorized.
        if not isfinite(alpha):  # alpha * 0 would be nan for x >= 0: compare (scalar loop)
            return lambda b, x: b.select(b.cmpf("olt", x, b.f(0.0)), b.mul(b.f(alpha), x), x)
        return lambda b, x: b.add(b.max(x, b.f(0.0)), b.mul(b.f(alpha), b.min(x, b.f(0.0))))
    if n == "graph.clip":
        lo, hi = _float(op, "min", NEG_INF), _float(op, "max", float("inf"))

        def clip(b: Body, x: SSAValue) -> SSAValue:
            if lo != NEG_INF:
                x = b.max(x, b.const(lo, x))
            if hi != float("inf"):
                x = b.min(x, b.const(hi, x))
            return x

        return clip
    if n == "graph.gelu":
        if _str(op, "approximate", "none") == "tanh":

            def gelu_tanh(b: Body, x: SSAValue) -> SSAValue:
                x3 = b.mul(b.mul(x, x), x)
                inner = b.mul(b.f(_SQRT_2_PI), b.add(x, b.mul(b.f(0.044715), x3)))
                return b.mul(b.mul(b.f(0.5), x), b.add(b.f(1.0), b.tanh(inner)))

            return gelu_tanh
        return lambda b, x: b.mul(
            b.mul(b.f(0.5), x), b.add(b.f(1.0), b.erf(b.mul(x, b.f(_SQRT1_2))))
        )
    raise NotImplementedError(n)


_MATH_UNARY: dict[str, Callable[[SSAValue], Operation]] = {
    "graph.floor": xmath.FloorOp,
    "graph.ceil": xmath.CeilOp,
    "graph.round": xmath.RoundEvenOp,
    "graph.sin": xmath.SinOp,
    "graph.cos": xmath.CosOp,
}

_UNARY = (
    *_MATH_UNARY,
    "graph.not",
    "graph.sqrt",
    "graph.exp",
    "graph.log",
    "graph.neg",
    "graph.abs",
    "graph.reciprocal",
    "graph.relu",
    "graph.sigmoid",
    "graph.tanh",
    "graph.erf",
    "graph.hard_swish",
    "graph.hard_sigmoid",
    "graph.leaky_relu",
    "graph.clip",
    "graph.gelu",
)


class ElementwiseLowering(_GraphLowering):
    """One parallel generic per op; broadcasting lives in the input maps."""

    ops = (*_BINARY, *_UNARY, "graph.where", "graph.expand", "graph.cast", "graph.bitcast")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        out = _out_shape(op)
        elem = elem_of(op.results[0])
        ins = list(op.operands)
        if op.name in _BINARY:
            fn2 = _BINARY[op.name]
            return [em.map_elementwise(ins, out, lambda b, a: fn2(b, a[0], a[1]), elem=elem)]
        if op.name == "graph.where":
            return [em.map_elementwise(ins, out, lambda b, a: b.select(*a), elem=elem)]
        if op.name == "graph.expand":
            return [em.map_elementwise(ins, out, lambda b, a: a[0], elem=elem)]
        if op.name == "graph.cast":
            if ins[0].type == op.results[0].type:
                return [ins[0]]
            return [em.map_elementwise(ins, out, lambda b, a: b.convert(a[0], elem), elem=elem)]
        if op.name == "graph.bitcast":
            return [
                em.map_elementwise(
                    ins, out, lambda b, a: b.op(arith.BitcastOp(a[0], elem)), elem=elem
                )
            ]
        fn1 = _unary_body(op)
        return [em.map_elementwise(ins, out, lambda b, a: fn1(b, a[0]), elem=elem)]


class ForwardLowering(_GraphLowering):
    """Identity and inference-mode Dropout are no-ops."""

    ops = ("graph.identity", "graph.dropout")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        return [op.operands[0]]


# -- convolution ------------------------------------------------------------------------------------


def _mac(b: Body, a: list[SSAValue]) -> SSAValue:
    """out + x * w: the multiply-accumulate body of conv and matmul."""
    return b.add(a[2], b.mul(a[0], a[1]))


def _window(op: Operation, rank: int) -> tuple[tuple[int, ...], ...]:
    """strides, pads (begins..., ends...), dilations of a window op over `rank` spatial dims; an
    absent or empty property is the default (ones, zeros, ones)."""
    return (
        _ints(op, "strides") or (1,) * rank,
        _ints(op, "pads") or (0,) * (2 * rank),
        _ints(op, "dilations") or (1,) * rank,
    )


def _window_exprs(
    first_out: int, first_win: int, strides: Sequence[int], dils: Sequence[int]
) -> list[AffineExpr]:
    """out_i * stride_i + k_i * dilation_i for each spatial dim, loops numbered from
    first_out (the output positions) and first_win (the window offsets)."""
    return [
        dim(first_out + i) * s + dim(first_win + i) * d
        for i, (s, d) in enumerate(zip(strides, dils, strict=True))
    ]


class ConvLowering(_GraphLowering):
    """graph.conv over r spatial dims -> [pad] + bias-broadcast init + one MAC generic.

    Weights are laid out (IC, k1..kr, OC) (per group: (G, ICg, k1..kr, OCg)) so the output-channel
    loop reads them with unit stride; constant weights are transposed at compile time.
    """

    ops = ("graph.conv",)

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x, w = op.operands[0], op.operands[1]
        bias = op.operands[2] if len(op.operands) > 2 else None
        xs = shape_of(x)
        r = len(xs) - 2
        strides, pads, dils = _window(op, r)
        g = _int(op, "group", 1)
        n = xs[0]
        m, cg, *ks = shape_of(w)
        out = _out_shape(op)
        osp = out[2:]
        ocg = m // g
        x = em.pad(x, [0, 0, *pads[:r]], [0, 0, *pads[r:]], 0.0)
        xp = shape_of(x)[2:]
        if g == 1:
            wt = self._weights(em, w, g, r)
            init = self._init(em, bias, out, [dim(1)], elem_of(op.results[0]))
            # loops: n, oc, o1..or, ic, k1..kr
            ic, k0 = 2 + r, 3 + r
            xmap = [dim(0), dim(ic), *_window_exprs(2, k0, strides, dils)]
            wmap = [dim(ic), *identity(r, k0), dim(1)]
            iters = "p" * (2 + r) + "r" * (1 + r)
            return [em.generic([x, wt], [xmap, wmap], init, identity(2 + r), iters, _mac)]
        xg = em.reshape(x, (n, g, cg, *xp))
        wt = self._weights(em, w, g, r)
        outg = (n, g, ocg, *osp)
        bg = em.reshape(bias, (g, ocg)) if bias else None
        init = self._init(em, bg, outg, [dim(1), dim(2)], elem_of(op.results[0]))
        # loops: n, g, ocg, o1..or, icg, k1..kr
        ic, k0 = 3 + r, 4 + r
        xmap = [dim(0), dim(1), dim(ic), *_window_exprs(3, k0, strides, dils)]
        wmap = [dim(1), dim(ic), *identity(r, k0), dim(2)]
        iters = "p" * (3 + r) + "r" * (1 + r)
        res = em.generic([xg, wt], [xmap, wmap], init, identity(3 + r), iters, _mac)
        return [em.reshape(res, out)]

    @staticmethod
    def _weights(em: Emitter, w: SSAValue, g: int, r: int) -> SSAValue:
        """(M, ICg, k1..kr) -> (IC, k1..kr, OC), per group (G, ICg, k1..kr, OCg)."""
        m, cg, *ks = shape_of(w)
        ocg = m // g
        wconst = constant_value(w)
        if wconst is not None:
            wg = wconst.reshape(g, ocg, cg, *ks).transpose(0, *range(2, r + 3), 1)
            return em.dense(np.ascontiguousarray(wg[0] if g == 1 else wg))
        if g == 1:  # out (IC, k.., OC) reads w[OC, IC, k..]
            wmap = [dim(r + 1), dim(0), *identity(r, 1)]
            return em.map_elementwise([w], (cg, *ks, m), lambda b, a: a[0], [wmap])
        wmap = [dim(0), dim(r + 2), dim(1), *identity(r, 2)]
        return em.map_elementwise(
            [em.reshape(w, (g, ocg, cg, *ks))], (g, cg, *ks, ocg), lambda b, a: a[0], [wmap]
        )

    @staticmethod
    def _init(
        em: Emitter, bias: SSAValue | None, shape: tuple[int, ...], bmap: list, elem: Attribute
    ) -> SSAValue:
        if bias is None:
            return em.fill(0.0, shape, elem)
        return em.map_elementwise([bias], shape, lambda b, a: a[0], [bmap])


class ConvNchwcLowering(_GraphLowering):
    """graph.conv_nchwc -> [pad] + bias-broadcast init + one MAC generic whose innermost loop is
    the output channel block: unit stride in weights and result, an invariant (broadcast) input
    element, whatever the image's width."""

    ops = ("graph.conv_nchwc",)

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x, w = op.operands[0], op.operands[1]
        bias = op.operands[2] if len(op.operands) > 2 else None
        strides, pads, dils = _window(op, 2)
        out = _out_shape(op)
        x = em.pad(x, [0, 0, *pads[:2], 0], [0, 0, *pads[2:], 0], 0.0)
        elem = elem_of(op.results[0])
        group = _int(op, "group", 1)
        n, cb, hp, wp, bi = shape_of(x)
        mb, cgb, kh, kw, wi, bo = shape_of(w)
        if group == 1:
            init = ConvLowering._init(em, bias, out, [dim(1) * bo + dim(4)], elem)
            # loops: n, ob, oh, ow, o | ib, kh, kw, i
            xmap = [dim(0), dim(5), *_window_exprs(2, 6, strides, dils), dim(8)]
            wmap = [dim(1), dim(5), dim(6), dim(7), dim(8), dim(4)]
            return [em.generic([x, w], [xmap, wmap], init, identity(5), "ppppprrrr", _mac)]
        if group == cb * bi:  # depthwise, loops: n, cb, oh, ow, c | kh, kw
            init = ConvLowering._init(em, bias, out, [dim(1) * bo + dim(4)], elem)
            xmap = [dim(0), dim(1), *_window_exprs(2, 5, strides, dils), dim(4)]
            wmap = [dim(1), dim(5), dim(6), dim(4)]
            w = em.reshape(w, (mb, kh, kw, bo))
            return [em.generic([x, w], [xmap, wmap], init, identity(5), "ppppprr", _mac)]
        # whole blocks per group: NCHW's grouped form, blocked; loops: n, g, obg, oh, ow, o |
        # ib, kh, kw, i
        xg = em.reshape(x, (n, group, cb // group, hp, wp, bi))
        wg = em.reshape(w, (group, mb // group, cgb, kh, kw, wi, bo))
        outg = (n, group, mb // group, *out[2:])
        bmap = [dim(1) * (mb // group * bo) + dim(2) * bo + dim(5)]
        init = ConvLowering._init(em, bias, outg, bmap, elem)
        xmap = [dim(0), dim(1), dim(6), *_window_exprs(3, 7, strides, dils), dim(9)]
        wmap = [dim(1), dim(2), dim(6), dim(7), dim(8), dim(9), dim(5)]
        res = em.generic([xg, wg], [xmap, wmap], init, identity(6), "pppppprrrr", _mac)
        return [em.reshape(res, out)]


class WinogradLowering(_GraphLowering):
    """graph.winograd_input / graph.winograd_output -> two separable generics each (a row pass
    and a column pass of the small transform matrices, 2 * (m+2) multiplications per point
    instead of (m+2)^2), on (points, points, N, TH, TW, blocks, b) tensors whose loops run
    tile-major (the matrices' indices innermost) and whose block is the vector lane."""

    ops = ("graph.winograd_input", "graph.winograd_output")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        m = _int(op, "tile")
        bt, _, at = winograd.matrices(m)
        if op.name == "graph.winograd_input":
            return [self._input(op, em, m, em.dense(bt.astype(np.float32)))]
        return [self._output(op, em, m, em.dense(at.astype(np.float32)))]

    @staticmethod
    def _pass(value: SSAValue, half: str) -> SSAValue:
        """Name a row or column pass as half of a Winograd transform (for profiles and logs)."""
        assert isinstance(value.owner, Operation)
        value.owner.attributes[WINOGRAD_ATTR] = StringAttr(half)
        return value

    @staticmethod
    def _input(op: Operation, em: Emitter, m: int, bt: SSAValue) -> SSAValue:
        pads = _ints(op, "pads")
        x = em.pad(op.operands[0], [0, 0, pads[0], pads[1], 0], [0, 0, pads[2], pads[3], 0], 0.0)
        n, cb, hp, wp, b = shape_of(x)
        a = winograd.alpha(m)
        th, tw = (hp - 2) // m, (wp - 2) // m
        elem = elem_of(op.results[0])
        shape = (a, a, n, th, tw, cb, b)
        # rows: t[i, j] = sum_k BT[i, k] x[m*ty + k, m*tx + j]; loops n, ty, tx, cb, i, j, c | k
        out = [dim(4), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
        xmap = [dim(0), dim(3), dim(1) * m + dim(7), dim(2) * m + dim(5), dim(6)]
        rows = em.generic(
            [x, bt], [xmap, [dim(4), dim(7)]], em.fill(0.0, shape, elem), out, "pppppppr", _mac
        )
        WinogradLowering._pass(rows, "input")
        # columns: v[i, j] = sum_k t[i, k] BT[j, k]; same loops
        tmap = [dim(4), dim(7), dim(0), dim(1), dim(2), dim(3), dim(6)]
        v = em.generic(
            [rows, bt], [tmap, [dim(5), dim(7)]], em.fill(0.0, shape, elem), out, "pppppppr", _mac
        )
        WinogradLowering._pass(v, "input")
        return em.reshape(v, _out_shape(op))

    @staticmethod
    def _output(op: Operation, em: Emitter, m: int, at: SSAValue) -> SSAValue:
        bias = op.operands[1] if len(op.operands) > 1 else None
        out = _out_shape(op)
        n, kb, h, w, b = out
        a = winograd.alpha(m)
        th, tw = winograd.tile_grid(h, w, m)
        full = (n, kb, th * m, tw * m, b)  # whole tiles; cut to `out` at the end
        elem = elem_of(op.results[0])
        prods = em.reshape(op.operands[0], (a, a, n, th, tw, kb, b))
        # rows: s[p, j] = sum_i AT[p, i] prods[i, j]; loops n, ty, tx, kb, p, j, c | i
        smap = [dim(4), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
        pmap = [dim(7), dim(5), dim(0), dim(1), dim(2), dim(3), dim(6)]
        rows = em.generic(
            [prods, at],
            [pmap, [dim(4), dim(7)]],
            em.fill(0.0, (m, a, n, th, tw, kb, b), elem),
            smap,
            "pppppppr",
            _mac,
        )
        WinogradLowering._pass(rows, "output")
        # columns into the image: y[m*ty + p, m*tx + q] = bias + sum_j s[p, j] AT[q, j];
        # loops n, kb, ty, p, tx, q, c | j
        init = ConvLowering._init(em, bias, full, [dim(1) * b + dim(4)], elem)
        ymap = [dim(0), dim(1), dim(2) * m + dim(3), dim(4) * m + dim(5), dim(6)]
        smap = [dim(3), dim(7), dim(0), dim(2), dim(4), dim(1), dim(6)]
        y = em.generic([rows, at], [smap, [dim(5), dim(7)]], init, ymap, "pppppppr", _mac)
        WinogradLowering._pass(y, "output")
        return y if full == out else em.extract_slice(y, [0] * 5, out, [1] * 5)


# -- matmul / gemm ----------------------------------------------------------------------------------


class MatmulLowering(_GraphLowering):
    """numpy.matmul and ONNX Gemm as one (batch.., m, n, k) generic; transposes live in maps."""

    ops = ("graph.matmul", "graph.gemm")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        if op.name == "graph.gemm":
            return [self._gemm(op, em)]
        a, b = op.operands[0], op.operands[1]
        sa, sb = shape_of(a), shape_of(b)
        out = _out_shape(op)
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
        init = em.fill(0.0, out, elem_of(op.results[0]))
        return [em.generic([a, b], [amap, bmap], init, omap, iters, _mac)]

    @staticmethod
    def _gemm(op: Operation, em: Emitter) -> SSAValue:
        a, b = op.operands[0], op.operands[1]
        c = op.operands[2] if len(op.operands) > 2 else None
        alpha, beta = _float(op, "alpha", 1.0), _float(op, "beta", 1.0)
        ta, tb = _int(op, "trans_a", 0), _int(op, "trans_b", 0)
        out = _out_shape(op)
        if c is not None and beta != 0.0:
            if beta == 1.0:
                init = em.map_elementwise([c], out, lambda bd, x: x[0])
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

        return em.generic([a, b], [amap, bmap], init, identity(2), "ppr", body)


# -- normalizations -------------------------------------------------------------------------------


class NormalizationLowering(_GraphLowering):
    """Softmax/LogSoftmax (max-subtracted), LayerNorm, inference BatchNorm."""

    ops = ("graph.softmax", "graph.log_softmax", "graph.layer_norm", "graph.batch_norm")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x = op.operands[0]
        s = shape_of(x)
        rank = len(s)
        ident = identity(rank)
        if op.name in ("graph.softmax", "graph.log_softmax"):
            axes = [_int(op, "axis", rank - 1)]
            red = em.reduced_exprs(rank, axes)
            mx = em.reduce(x, axes, "max")
            e = em.map_elementwise([x, mx], s, lambda b, a: b.exp(b.sub(a[0], a[1])), [ident, red])
            sm = em.reduce(e, axes, "sum")
            if op.name == "graph.softmax":
                return [
                    em.map_elementwise([e, sm], s, lambda b, a: b.div(a[0], a[1]), [ident, red])
                ]
            return [
                em.map_elementwise(
                    [x, mx, sm],
                    s,
                    lambda b, a: b.sub(b.sub(a[0], a[1]), b.log(a[2])),
                    [ident, red, red],
                )
            ]
        eps = _float(op, "epsilon", 1e-5)
        if op.name == "graph.batch_norm":
            scale, bias, mean, var = op.operands[1:5]
            pm = [dim(1)]

            def bn(b: Body, a: list[SSAValue]) -> SSAValue:
                xn = b.div(b.sub(a[0], a[3]), b.sqrt(b.add(a[4], b.f(eps))))
                return b.add(b.mul(xn, a[1]), a[2])

            return [em.map_elementwise([x, scale, bias, mean, var], s, bn, [ident, pm, pm, pm, pm])]
        axis = _int(op, "axis", rank - 1)
        axes = list(range(axis, rank))
        inv_n = 1.0 / prod(s[axis:])
        red = em.reduced_exprs(rank, axes)
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
        return [em.map_elementwise([d, var, *params], s, ln, maps)]


# -- reductions and pooling -------------------------------------------------------------------------


class ReductionLowering(_GraphLowering):
    """ReduceMean/Sum/Prod/Max and global pools: one reduction generic (+ scale) + keepdims
    reshape."""

    ops = (
        "graph.reduce_mean",
        "graph.reduce_sum",
        "graph.reduce_prod",
        "graph.reduce_max",
        "graph.global_avg_pool",
        "graph.global_max_pool",
    )

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x = op.operands[0]
        s = shape_of(x)
        if op.name.startswith("graph.global"):
            axes: list[int] = list(range(2, len(s)))
        else:
            axes = list(_ints(op, "axes", ())) or list(range(len(s)))
        kind = (
            "max"
            if op.name.endswith("max") or op.name.endswith("max_pool")
            else "prod"
            if op.name == "graph.reduce_prod"
            else "sum"
        )
        res = em.reduce(x, axes, kind)
        if op.name in ("graph.reduce_mean", "graph.global_avg_pool"):
            inv = 1.0 / prod(s[a] for a in axes)
            res = em.map_elementwise([res], shape_of(res), lambda b, a: b.mul(a[0], b.f(inv)))
        return [em.reshape(res, _out_shape(op))]


class PoolLowering(_GraphLowering):
    """MaxPool/AvgPool over r spatial dims: pad (incl. ceil-mode overhang) + a
    (n, c, o1..or, k1..kr) generic.

    A tensor.empty of the window shape is a body-unused input that gives the window loops their
    extents (as MLIR's named pooling ops do). Average divisors are computed with numpy at
    compile time: the window positions that fall in the input (or in the explicit padding, with
    count_include_pad), dilation included.
    """

    ops = ("graph.max_pool", "graph.avg_pool")

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x = op.operands[0]
        xs = shape_of(x)
        r = len(xs) - 2
        kernel = _ints(op, "kernel")
        strides, pads, dils = _window(op, r)
        out = _out_shape(op)
        osp = out[2:]
        is_max = op.name == "graph.max_pool"
        extra = [
            max(0, (o - 1) * s + d * (k - 1) + 1 - (size + lo + hi))
            for o, s, d, k, size, lo, hi in zip(
                osp, strides, dils, kernel, xs[2:], pads[:r], pads[r:], strict=True
            )
        ]
        elem = elem_of(x)
        fill_value = NEG_INF if is_max else 0.0
        his = [hi + e for hi, e in zip(pads[r:], extra, strict=True)]
        xp = em.pad(x, [0, 0, *pads[:r]], [0, 0, *his], fill_value)
        window = em.empty(tuple(kernel))
        xmap = [dim(0), dim(1), *_window_exprs(2, 2 + r, strides, dils)]
        init = em.fill(fill_value, out, elem)

        def body(b: Body, a: list[SSAValue]) -> SSAValue:
            return b.max(a[2], a[0]) if is_max else b.add(a[2], a[0])

        iters = "p" * (2 + r) + "r" * r
        wmap = identity(r, 2 + r)
        res = em.generic([xp, window], [xmap, wmap], init, identity(2 + r), iters, body)
        if is_max:
            return [res]
        include = _int(op, "count_include_pad", 0)

        def counts(i: int) -> np.ndarray:
            """Per output position of spatial dim i, the window taps that are counted."""
            lo, hi = pads[i], pads[r + i]
            size = xs[2 + i]
            lo_lim, hi_lim = (-lo, size + hi) if include else (0, size)
            taps = np.arange(osp[i])[:, None] * strides[i] - lo + np.arange(kernel[i]) * dils[i]
            return ((taps >= lo_lim) & (taps < hi_lim)).sum(axis=1).astype(np.float32)

        div = np.ones((), np.float32)
        for i in range(r):
            div = np.multiply.outer(div, counts(i))
        if np.all(div == div.flat[0]):
            inv = float(1.0 / div.flat[0])
            return [em.map_elementwise([res], out, lambda b, a: b.mul(a[0], b.f(inv)))]
        recip = em.dense((1.0 / div).astype(np.float32))
        return [
            em.map_elementwise(
                [res, recip],
                out,
                lambda b, a: b.mul(a[0], a[1]),
                [identity(2 + r), identity(r, 2)],
            )
        ]


# -- data movement ------------------------------------------------------------------------------


class DataMovementLowering(_GraphLowering):
    """Reshapes, transpose, concat, split, slice, gather, pad."""

    ops = (
        "graph.reshape",
        "graph.flatten",
        "graph.squeeze",
        "graph.unsqueeze",
        "graph.transpose",
        "graph.concat",
        "graph.split",
        "graph.slice",
        "graph.gather",
        "graph.pad",
        "graph.layout_transform",
    )

    def lower(self, op: Operation, em: Emitter) -> Sequence[SSAValue]:
        x = op.operands[0]
        s = shape_of(x)
        n = op.name
        if n in ("graph.reshape", "graph.flatten", "graph.squeeze", "graph.unsqueeze"):
            return [em.reshape(x, _out_shape(op))]
        if n == "graph.transpose":
            perm = _ints(op, "perm", tuple(reversed(range(len(s)))))
            inv = {p: j for j, p in enumerate(perm)}
            xmap = [dim(inv[k]) for k in range(len(s))]
            return [em.map_elementwise([x], _out_shape(op), lambda b, a: a[0], [xmap])]
        if n == "graph.concat":
            axis = _int(op, "axis", 0)
            res = em.empty(_out_shape(op), elem_of(op.results[0]))
            off = 0
            for v in op.operands:
                offs = [0] * len(s)
                offs[axis] = off
                res = em.insert_slice(v, res, offs)
                off += shape_of(v)[axis]
            return [res]
        if n == "graph.split":
            axis = _int(op, "axis", 0)
            results = []
            off = 0
            for res in op.results:
                rs = shape_of(res)
                offs = [0] * len(s)
                offs[axis] = off
                results.append(em.extract_slice(x, offs, rs, [1] * len(s)))
                off += rs[axis]
            return results
        if n == "graph.slice":
            return [self._slice(op, em)]
        if n == "graph.gather":
            return [self._gather(op, em)]
        if n == "graph.layout_transform":
            return [self._layout_transform(op, em)]
        if n == "graph.pad":
            pads = _ints(op, "pads")
            rank = len(s)
            return [em.pad(x, pads[:rank], pads[rank:], _float(op, "value", 0.0))]
        raise NotImplementedError(n)

    @staticmethod
    def _layout_transform(op: Operation, em: Emitter) -> SSAValue:
        """NCHW -> NCHW[b]c reads x[n, cb*b + c, h, w]; NCHW[b]c -> NCHW permutes to (N, C/b,
        b, H, W) and collapses; block to block goes through NCHW."""
        x = op.operands[0]
        src, dst = _str(op, "src", "NCHW"), _str(op, "dst", "NCHW")
        bs, bd = layout_block(src), layout_block(dst)
        s = shape_of(x)
        if bs:
            n, cb, h, w, b = s
            xmap = [dim(0), dim(1), dim(3), dim(4), dim(2)]
            moved = em.map_elementwise([x], (n, cb, b, h, w), lambda _, a: a[0], [xmap])
            x = em.reshape(moved, (n, cb * b, h, w))
            s = shape_of(x)
        if not bd:
            return x
        n, c, h, w = s
        xmap = [dim(0), dim(1) * bd + dim(4), dim(2), dim(3)]
        return em.map_elementwise([x], (n, c // bd, h, w, bd), lambda _, a: a[0], [xmap])

    @staticmethod
    def _slice(op: Operation, em: Emitter) -> SSAValue:
        x = op.operands[0]
        rank = len(shape_of(x))
        starts = _ints(op, "starts")
        steps = _ints(op, "steps", (1,) * rank)
        out = _out_shape(op)
        if all(st > 0 for st in steps):
            return em.extract_slice(x, starts, out, steps)
        # negative steps: read x[start + step * i] (a negative map coefficient)
        xmap = [dim(i) * st + cst(s0) for i, (s0, st) in enumerate(zip(starts, steps, strict=True))]
        return em.map_elementwise([x], out, lambda b, a: a[0], [xmap])

    @staticmethod
    def _gather(op: Operation, em: Emitter) -> SSAValue:
        data, idx = op.operands[0], op.operands[1]
        ds, qs = shape_of(data), shape_of(idx)
        axis = _int(op, "axis", 0)
        q = len(qs)
        out = _out_shape(op)
        ity = elem_of(idx)
        assert isinstance(ity, IntegerType), f"gather indices are integers (verified), got {ity}"
        extent = ds[axis]

        def body(b: Body, a: list[SSAValue]) -> SSAValue:
            i = a[0]
            neg = b.compare("lt", i, b.const(0, i))
            i = b.select(neg, b.add(i, b.const(extent, i)), i)
            # an index out of [-extent, extent) is clamped, never read out of bounds
            i = b.min(b.max(i, b.const(0, i)), b.const(extent - 1, i))
            i = b.op(arith.IndexCastOp(i, IndexType()))
            coords = [b.index(j) for j in range(axis)] + [i]
            coords += [b.index(j - 1 + q) for j in range(axis + 1, len(ds))]
            return b.op(tensor.ExtractOp(data, coords, elem_of(data)))

        imap = [dim(axis + j) for j in range(q)]
        init = em.empty(out, elem_of(data))
        return em.generic([idx], [imap], init, identity(len(out)), "p" * len(out), body)


PATTERNS: tuple[type[_GraphLowering], ...] = (
    ConstantLowering,
    ElementwiseLowering,
    ForwardLowering,
    ConvLowering,
    ConvNchwcLowering,
    WinogradLowering,
    MatmulLowering,
    NormalizationLowering,
    ReductionLowering,
    PoolLowering,
    DataMovementLowering,
)


GROUP_ATTR = "ziggurat.group"
"""Marks the tensor-level ops that came from one `graph.fused` group: one kernel later."""

_KERNEL_OPS = ("linalg.generic", "linalg.fill", "tensor.insert_slice")


def inline_fused_group(fused: Operation, group: int) -> None:
    """Replace a lowered `graph.fused` by its body, tagging the ops that will become its kernel."""
    block = fused.regions[0].block
    for arg, value in zip(block.args, fused.operands, strict=True):
        arg.replace_all_uses_with(value)
    terminator = block.last_op
    assert terminator is not None
    results = list(terminator.operands)
    parent = fused.parent_block()
    assert parent is not None
    for inner in list(block.ops):
        if inner is terminator:
            break
        inner.detach()
        if inner.name in _KERNEL_OPS:
            inner.attributes[GROUP_ATTR] = IntegerAttr(group, 64)
        parent.insert_op_before(inner, fused)
    for old, new in zip(fused.results, results, strict=True):
        old.replace_all_uses_with(new)
    fused.detach()
    fused.erase()


@dataclass(frozen=True)
class ConvertGraphToLinalgPass(ModulePass):
    """Lower the graph level to the tensor level; fails loudly on any graph op it cannot lower."""

    name = "convert-graph-to-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([p() for p in PATTERNS]), apply_recursively=False
        ).rewrite_module(op)
        for group, fused in enumerate([o for o in op.walk() if o.name == "graph.fused"]):
            inline_fused_group(fused, group)
        region_dce(op.body)
        left = sorted({o.name for o in op.walk() if o.name.startswith("graph.")})
        if left:
            raise DiagnosticException(f"convert-graph-to-linalg: no lowering for {left}")


__all__ = ["PATTERNS", "ConvertGraphToLinalgPass"]
