"""Elementwise graph ops: one parallel linalg.generic each; broadcasting lives in the input maps.

The scalar math of each op is a table entry: binary ops by class, unary ops by class (those
with properties read them, declared defaults included, once at rewrite time).
"""

from __future__ import annotations

from collections.abc import Callable
from math import isfinite, sqrt

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import Operation, SSAValue

from dialects import graph as g
from passes.conversions.convert_graph_to_linalg_builder import (
    NEG_INF,
    Body,
    BodyFn,
    Emitter,
    elem_of,
    is_float,
)
from passes.conversions.graph_to_linalg.table import (
    Lowering,
    LoweringTable,
    OpT,
    copy,
    out_shape,
)

BinaryFn = Callable[[Body, SSAValue, SSAValue], SSAValue]
UnaryFn = Callable[[Body, SSAValue], SSAValue]


def _compare(pred: str) -> BinaryFn:
    return lambda b, x, y: b.compare(pred, x, y)


def _scalar_op(make: Callable[[SSAValue, SSAValue], Operation]) -> BinaryFn:
    return lambda b, x, y: b.op(make(x, y))


_BINARY: dict[type[g.BinaryOp], BinaryFn] = {
    g.AddOp: Body.add,
    g.SubOp: Body.sub,
    g.MulOp: Body.mul,
    g.DivOp: Body.div,
    g.PowOp: _scalar_op(xmath.PowFOp),
    g.MaxOp: Body.max,
    g.MinOp: Body.min,
    g.EqualOp: _compare("eq"),
    g.LessOp: _compare("lt"),
    g.LessEqualOp: _compare("le"),
    g.GreaterOp: _compare("gt"),
    g.GreaterEqualOp: _compare("ge"),
    g.AndOp: _scalar_op(arith.AndIOp),
    g.OrOp: _scalar_op(arith.OrIOp),
    g.XorOp: _scalar_op(arith.XOrIOp),
    g.ShiftLeftOp: _scalar_op(arith.ShLIOp),
    g.ShiftRightOp: _scalar_op(arith.ShRSIOp),
}

_SQRT1_2 = 1.0 / sqrt(2.0)
_SQRT_2_PI = sqrt(2.0 / np.pi)


def _math(make: Callable[[SSAValue], Operation]) -> UnaryFn:
    return lambda b, x: b.op(make(x))


_UNARY: dict[type[g.UnaryOp], UnaryFn] = {
    g.FloorOp: _math(xmath.FloorOp),
    g.CeilOp: _math(xmath.CeilOp),
    g.RoundOp: _math(xmath.RoundEvenOp),
    g.SinOp: _math(xmath.SinOp),
    g.CosOp: _math(xmath.CosOp),
    g.NotOp: lambda b, x: b.op(arith.XOrIOp(x, b.const(-1, x))),  # all ones (bool: 1)
    g.SqrtOp: Body.sqrt,
    g.ExpOp: Body.exp,
    g.LogOp: Body.log,
    g.NegOp: Body.neg,
    g.AbsOp: lambda b, x: b.op(xmath.AbsFOp(x)) if is_float(x.type) else b.max(x, b.neg(x)),
    g.ReciprocalOp: lambda b, x: b.div(b.f(1.0), x),
    g.ReluOp: lambda b, x: b.max(x, b.const(0, x)),
    g.SigmoidOp: lambda b, x: b.div(b.f(1.0), b.add(b.f(1.0), b.exp(b.neg(x)))),
    g.TanhOp: Body.tanh,
    g.ErfOp: Body.erf,
    g.HardSwishOp: lambda b, x: b.mul(
        x, b.max(b.f(0.0), b.min(b.f(1.0), b.add(b.mul(x, b.f(1.0 / 6.0)), b.f(0.5))))
    ),
}
"""Unary ops without properties: their scalar math."""


def _hard_sigmoid(op: g.HardSigmoidOp) -> UnaryFn:
    alpha, beta = op.alpha.value.data, op.beta.value.data
    return lambda b, x: b.max(b.f(0.0), b.min(b.f(1.0), b.add(b.mul(x, b.f(alpha)), b.f(beta))))


def _leaky_relu(op: g.LeakyReluOp) -> UnaryFn:
    alpha = op.alpha.value.data
    # max(x, 0) + alpha * min(x, 0), not select(x < 0, ...): xDSL's arith.cmpf verifies only
    # scalar i1 results, so a compare in the body breaks once the loop is vectorized.
    if not isfinite(alpha):  # alpha * 0 would be nan for x >= 0: compare (scalar loop)
        return lambda b, x: b.select(b.cmpf("olt", x, b.f(0.0)), b.mul(b.f(alpha), x), x)
    return lambda b, x: b.add(b.max(x, b.f(0.0)), b.mul(b.f(alpha), b.min(x, b.f(0.0))))


def _clip(op: g.ClipOp) -> UnaryFn:
    lo, hi = op.min.value.data, op.max.value.data

    def clip(b: Body, x: SSAValue) -> SSAValue:
        if lo != NEG_INF:
            x = b.max(x, b.const(lo, x))
        if hi != float("inf"):
            x = b.min(x, b.const(hi, x))
        return x

    return clip


def _gelu(op: g.GeluOp) -> UnaryFn:
    if op.approximate.data == "tanh":

        def gelu_tanh(b: Body, x: SSAValue) -> SSAValue:
            x3 = b.mul(b.mul(x, x), x)
            inner = b.mul(b.f(_SQRT_2_PI), b.add(x, b.mul(b.f(0.044715), x3)))
            return b.mul(b.mul(b.f(0.5), x), b.add(b.f(1.0), b.tanh(inner)))

        return gelu_tanh
    return lambda b, x: b.mul(b.mul(b.f(0.5), x), b.add(b.f(1.0), b.erf(b.mul(x, b.f(_SQRT1_2)))))


def _map(op: Operation, em: Emitter, body: BodyFn) -> SSAValue:
    """One parallel generic over the op's result, its operands broadcast numpy-style."""
    return em.map_elementwise(list(op.operands), out_shape(op), body, elem=elem_of(op.results[0]))


def _binary(fn: BinaryFn) -> Lowering[g.BinaryOp]:
    return lambda op, em: _map(op, em, lambda b, a: fn(b, a[0], a[1]))


def _unary(fn: UnaryFn) -> Lowering[Operation]:
    return lambda op, em: _map(op, em, lambda b, a: fn(b, a[0]))


def _unary_with_properties(body_of: Callable[[OpT], UnaryFn]) -> Lowering[OpT]:
    return lambda op, em: _unary(body_of(op))(op, em)


ELEMENTWISE = LoweringTable(
    {cls: _binary(fn) for cls, fn in _BINARY.items()}
    | {cls: _unary(fn) for cls, fn in _UNARY.items()}
    | {
        g.HardSigmoidOp: _unary_with_properties(_hard_sigmoid),
        g.LeakyReluOp: _unary_with_properties(_leaky_relu),
        g.ClipOp: _unary_with_properties(_clip),
        g.GeluOp: _unary_with_properties(_gelu),
    }
)


@ELEMENTWISE.register(g.WhereOp)
def _where(op: g.WhereOp, em: Emitter) -> SSAValue:
    return _map(op, em, lambda b, a: b.select(*a))


@ELEMENTWISE.register(g.ExpandOp)
def _expand(op: g.ExpandOp, em: Emitter) -> SSAValue:
    return _map(op, em, copy)


@ELEMENTWISE.register(g.CastOp)
def _cast(op: g.CastOp, em: Emitter) -> SSAValue:
    if op.x.type == op.result.type:
        return op.x
    elem = elem_of(op.result)
    return _map(op, em, lambda b, a: b.convert(a[0], elem))


@ELEMENTWISE.register(g.BitcastOp)
def _bitcast(op: g.BitcastOp, em: Emitter) -> SSAValue:
    elem = elem_of(op.result)
    return _map(op, em, lambda b, a: b.op(arith.BitcastOp(a[0], elem)))
