"""Converters of elementwise operators: math, comparisons, logic, activations, Cast."""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    f32,
)
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    results,
    text,
)
from dialects import graph as g

_UNARY: dict[str, type[g.GraphOp]] = {
    "Sqrt": g.SqrtOp,
    "Exp": g.ExpOp,
    "Log": g.LogOp,
    "Neg": g.NegOp,
    "Abs": g.AbsOp,
    "Reciprocal": g.ReciprocalOp,
    "Relu": g.ReluOp,
    "Sigmoid": g.SigmoidOp,
    "Tanh": g.TanhOp,
    "Erf": g.ErfOp,
    "HardSwish": g.HardSwishOp,
    "Identity": g.IdentityOp,
    "Floor": g.FloorOp,
    "Ceil": g.CeilOp,
    "Round": g.RoundOp,
    "Sin": g.SinOp,
    "Cos": g.CosOp,
    "Not": g.NotOp,
}


_BINARY: dict[str, type[g.GraphOp]] = {
    "Add": g.AddOp,
    "Sub": g.SubOp,
    "Mul": g.MulOp,
    "Div": g.DivOp,
    "Equal": g.EqualOp,
    "Less": g.LessOp,
    "LessOrEqual": g.LessEqualOp,
    "Greater": g.GreaterOp,
    "GreaterOrEqual": g.GreaterEqualOp,
    "And": g.AndOp,
    "Or": g.OrOp,
    "Xor": g.XorOp,
}


@converter(*_UNARY)
def convert_unary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return results(imp.emit(_UNARY[node.op_type](imp.value(node.input[0]))))


@converter(*_BINARY)
def convert_binary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a, b = imp.value(node.input[0]), imp.value(node.input[1])
    return results(imp.emit(_BINARY[node.op_type](a, b)))


@converter("Pow")
def convert_pow(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x ** y in float32: an integer exponent is converted, an integer base is computed in
    float32 and converted back (exact while the result fits float32's 24-bit mantissa)."""
    x = imp.value(node.input[0])
    y = imp.value(node.input[1], dtype=np.float32 if imp.const(node.input[1]) is not None else None)
    el = element_type_of(x)
    xf = x if el == f32 else imp.op(g.CastOp(x, to="f32"))
    yf = y if element_type_of(y) == f32 else imp.op(g.CastOp(y, to="f32"))
    p = imp.op(g.PowOp(xf, yf))
    return [p if el == f32 else imp.op(g.CastOp(imp.op(g.RoundOp(p)), to=str(el)))]


def _trunc(imp: Importer, x: SSAValue) -> SSAValue:
    """Rounding toward zero (floats)."""
    neg = imp.op(g.LessOp(x, imp.scalar(0.0)))
    return imp.op(g.WhereOp(neg, imp.op(g.CeilOp(x)), imp.op(g.FloorOp(x))))


def _signs_differ(imp: Importer, r: SSAValue, s: SSAValue) -> SSAValue:
    """r != 0 and r, s on opposite sides of zero."""
    zero = imp.scalar(0, like=r)
    nonzero = imp.op(g.NotOp(imp.op(g.EqualOp(r, zero))))
    opposite = imp.op(g.XorOp(imp.op(g.LessOp(r, zero)), imp.op(g.LessOp(s, zero))))
    return imp.op(g.AndOp(nonzero, opposite))


def _split(imp: Importer, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Veltkamp's split of a float32 into two halves of 12 significant bits (hi + lo = x)."""
    c = imp.op(g.MulOp(x, imp.scalar(4097.0)))
    hi = imp.op(g.SubOp(c, imp.op(g.SubOp(c, x))))
    return hi, imp.op(g.SubOp(x, hi))


def _sub_product(imp: Importer, a: SSAValue, n: SSAValue, b: SSAValue) -> SSAValue:
    """a - n * b with the product exact (Dekker's two-product: n * b = p + e), so the
    difference is exact when n * b is close to a (Sterbenz) and rounded once otherwise."""
    p = imp.op(g.MulOp(n, b))
    (nh, nl), (bh, bl) = _split(imp, n), _split(imp, b)
    e = imp.op(g.SubOp(imp.op(g.MulOp(nh, bh)), p))
    for u, v in ((nh, bl), (nl, bh), (nl, bl)):
        e = imp.op(g.AddOp(e, imp.op(g.MulOp(u, v))))
    return imp.op(g.SubOp(imp.op(g.SubOp(a, p)), e))


def _fmod_float(imp: Importer, a: SSAValue, b: SSAValue) -> SSAValue:
    """C's fmod: a - trunc(a / b) * b with the product exact, then one correction step for a
    quotient that rounded across an integer (the remainder must have a's sign and be smaller
    than |b|). Exact while |a / b| < 2**24 (and |b| < 2**115, for the split); a finite a over
    an infinite b is a, as in C."""
    n = _trunc(imp, imp.op(g.DivOp(a, b)))
    zero = imp.scalar(0.0)
    r = imp.op(g.WhereOp(imp.op(g.EqualOp(n, zero)), a, _sub_product(imp, a, n, b)))
    abs_b = imp.op(g.AbsOp(b))
    step = imp.op(  # |b| with a's sign
        g.WhereOp(imp.op(g.LessOp(a, zero)), imp.op(g.NegOp(abs_b)), abs_b)
    )
    r = imp.op(g.WhereOp(_signs_differ(imp, r, a), imp.op(g.AddOp(r, step)), r))
    too_big = imp.op(g.GreaterEqualOp(imp.op(g.AbsOp(r)), abs_b))
    return imp.op(g.WhereOp(too_big, imp.op(g.SubOp(r, step)), r))


def _fmod_int(imp: Importer, a: SSAValue, b: SSAValue) -> SSAValue:
    """a - (a / b) * b with truncating division; a divisor of 0 or -1 (which would trap: by
    zero, or INT_MIN / -1) is replaced by 1, giving 0 as numpy does."""
    one = imp.scalar(1, like=b)
    small = imp.op(
        g.AndOp(
            imp.op(g.LessEqualOp(b, one)),
            imp.op(g.GreaterEqualOp(b, imp.scalar(-1, like=b))),
        )
    )
    safe = imp.op(g.WhereOp(small, one, b))
    return imp.op(g.SubOp(a, imp.op(g.MulOp(imp.op(g.DivOp(a, safe)), safe))))


@converter("Mod")
def convert_mod(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Remainder with broadcasting: fmod=1 has the dividend's sign (C's fmod), fmod=0 the
    divisor's (Python's %, numpy.mod; for floats too, as onnx's reference does)."""
    fmod = int(attrs(node).get("fmod", 0))
    if fmod not in (0, 1):
        raise imp.error(f"fmod must be 0 or 1, got {fmod}")
    a, b = imp.value(node.input[0]), imp.value(node.input[1])
    el = element_type_of(a)
    if el != element_type_of(b):
        raise imp.error(f"A and B must have one element type, got {el} and {element_type_of(b)}")
    is_float = el == f32
    r = _fmod_float(imp, a, b) if is_float else _fmod_int(imp, a, b)
    if fmod == 1:
        return [r]
    r = imp.op(g.WhereOp(_signs_differ(imp, r, b), imp.op(g.AddOp(r, b)), r))
    if is_float:  # a zero remainder takes the divisor's sign
        zero = imp.scalar(0.0)
        signed = imp.op(g.WhereOp(imp.op(g.LessOp(b, zero)), imp.scalar(-0.0), zero))
        r = imp.op(g.WhereOp(imp.op(g.EqualOp(r, zero)), signed, r))
    return [r]


@converter("Sum", "Mean", "Max", "Min")
def convert_sum(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Variadic sum (mean, max, min) with broadcasting: a chain of binary ops (then a multiply
    by 1/n for the mean)."""
    cls = {"Sum": g.AddOp, "Mean": g.AddOp, "Max": g.MaxOp, "Min": g.MinOp}[node.op_type]
    names = [n for n in node.input if n]
    if not names:
        raise imp.error("has no inputs")
    total = imp.value(names[0])
    for name in names[1:]:
        total = imp.op(cls(total, imp.value(name)))
    if node.op_type == "Mean" and len(names) > 1:
        total = imp.op(g.MulOp(total, imp.scalar(1.0 / len(names))))
    elif len(names) == 1:
        total = imp.op(g.IdentityOp(total))
    return [total]


@converter("Where")
def convert_where(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cond, x, y = (imp.value(n) for n in node.input[:3])
    return results(imp.emit(g.WhereOp(cond, x, y)))


@converter("Expand")
def convert_expand(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.int_input(node, 1, "shape")
    return results(imp.emit(g.ExpandOp(imp.value(node.input[0]), shape=shape)))


@converter("IsNaN")
def convert_isnan(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    return results(imp.emit(g.NotOp(imp.op(g.EqualOp(x, x)))))  # only nan differs from itself


@converter("Sign")
def convert_sign(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    zero = imp.scalar(0, like=x)
    to = str(element_type_of(x))
    pos = imp.op(g.CastOp(imp.op(g.GreaterOp(x, zero)), to=to))
    neg = imp.op(g.CastOp(imp.op(g.LessOp(x, zero)), to=to))
    return results(imp.emit(g.SubOp(pos, neg)))


def _negative_part(imp: Importer, x: SSAValue, alpha: float) -> SSAValue:
    """alpha * (exp(min(x, 0)) - 1): the x < 0 branch of Elu/Selu (0 for x >= 0)."""
    e = imp.op(g.ExpOp(imp.op(g.MinOp(x, imp.scalar(0.0)))))
    return imp.op(g.MulOp(imp.op(g.SubOp(e, imp.scalar(1.0))), imp.scalar(alpha)))


@converter("Elu", "Selu", "Celu")
def convert_elu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    x = imp.value(node.input[0])
    if node.op_type == "Celu":  # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        alpha = float(a.get("alpha", 1.0))
        scaled = imp.op(g.MulOp(x, imp.scalar(1.0 / alpha)))
        return [imp.op(g.AddOp(imp.op(g.ReluOp(x)), _negative_part(imp, scaled, alpha)))]
    default_alpha = 1.0 if node.op_type == "Elu" else 1.67326319217681884765625
    y = imp.op(g.AddOp(imp.op(g.ReluOp(x)), _negative_part(imp, x, a.get("alpha", default_alpha))))
    if node.op_type == "Selu":
        y = imp.op(g.MulOp(y, imp.scalar(a.get("gamma", 1.05070102214813232421875))))
    return [y]


def _softplus(imp: Importer, x: SSAValue) -> SSAValue:
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): no overflow for large x."""
    t = imp.op(g.ExpOp(imp.op(g.NegOp(imp.op(g.AbsOp(x))))))
    return imp.op(
        g.AddOp(imp.op(g.ReluOp(x)), imp.op(g.LogOp(imp.op(g.AddOp(t, imp.scalar(1.0))))))
    )


@converter("Softplus", "Mish")
def convert_softplus(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    sp = _softplus(imp, x)
    return [sp if node.op_type == "Softplus" else imp.op(g.MulOp(x, imp.op(g.TanhOp(sp))))]


@converter("Sinh", "Cosh")
def convert_sinh(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(exp(x) -+ exp(-x)) / 2."""
    x = imp.value(node.input[0])
    e, inv = imp.op(g.ExpOp(x)), imp.op(g.ExpOp(imp.op(g.NegOp(x))))
    combined = imp.op((g.SubOp if node.op_type == "Sinh" else g.AddOp)(e, inv))
    return results(imp.emit(g.MulOp(combined, imp.scalar(0.5))))


@converter("ThresholdedRelu")
def convert_thresholded_relu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    above = imp.op(g.GreaterOp(x, imp.scalar(attrs(node).get("alpha", 1.0))))
    return results(imp.emit(g.WhereOp(above, x, imp.scalar(0.0))))


@converter("PRelu")
def convert_prelu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """max(x, 0) + slope * min(x, 0), slope broadcast against x."""
    x, slope = imp.value(node.input[0]), imp.value(node.input[1])
    zero = imp.scalar(0, like=x)
    neg = imp.op(g.MulOp(imp.op(g.MinOp(x, zero)), slope))
    return results(imp.emit(g.AddOp(imp.op(g.MaxOp(x, zero)), neg)))


@converter("LeakyRelu")
def convert_leaky_relu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return results(
        imp.emit(g.LeakyReluOp(imp.value(node.input[0]), alpha=attrs(node).get("alpha", 0.01)))
    )


@converter("HardSigmoid")
def convert_hard_sigmoid(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    return results(
        imp.emit(
            g.HardSigmoidOp(
                imp.value(node.input[0]), alpha=a.get("alpha", 0.2), beta=a.get("beta", 0.5)
            )
        )
    )


@converter("Gelu")
def convert_gelu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    approx = text(attrs(node).get("approximate", "none"))
    return results(imp.emit(g.GeluOp(imp.value(node.input[0]), approximate=approx)))


@converter("Clip")
def convert_clip(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)  # opset < 11 used attributes; keep them as a fallback
    lo, hi = a.get("min", -math.inf), a.get("max", math.inf)
    if imp.has(node, 1):
        lo = imp.scalar_input(node, 1, "min")
    if imp.has(node, 2):
        hi = imp.scalar_input(node, 2, "max")
    return results(imp.emit(g.ClipOp(imp.value(node.input[0]), min=lo, max=hi)))


@converter("Dropout")
def convert_dropout(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if imp.has(node, 2):  # opset 12+: training_mode input; inference (identity) unless true
        training = bool(imp.scalar_input(node, 2, "training_mode"))
        ratio = imp.scalar_input(node, 1, "ratio") if imp.has(node, 1) else 0.5
        if training and ratio != 0.0:
            raise imp.error("training_mode=1 (random dropout) is not supported (inference only)")
    y = imp.op(g.DropoutOp(imp.value(node.input[0])))
    return [y, np.ones(imp.shape_of(y), dtype=np.bool_)]  # inference keeps every element


def _float_input(imp: Importer, node: onnx.NodeProto) -> SSAValue:
    x = imp.value(node.input[0])
    if element_type_of(x) != f32:
        raise imp.error(f"needs a float input, got element type {element_type_of(x)}")
    return x


@converter("Swish")
def convert_swish(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x * sigmoid(alpha * x)."""
    x = _float_input(imp, node)
    alpha = float(attrs(node).get("alpha", 1.0))
    scaled = x if alpha == 1.0 else imp.op(g.MulOp(x, imp.scalar(alpha)))
    return [imp.op(g.MulOp(x, imp.op(g.SigmoidOp(scaled))))]


@converter("Softsign")
def convert_softsign(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x / (1 + |x|)."""
    x = _float_input(imp, node)
    return [imp.op(g.DivOp(x, imp.op(g.AddOp(imp.op(g.AbsOp(x)), imp.scalar(1.0)))))]


@converter("IsInf")
def convert_isinf(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x == +inf (if detect_positive) or x == -inf (if detect_negative)."""
    a = attrs(node)
    x = _float_input(imp, node)
    tests = [
        imp.op(g.EqualOp(x, imp.scalar(sign * math.inf)))
        for sign, key in ((1, "detect_positive"), (-1, "detect_negative"))
        if int(a.get(key, 1))
    ]
    if not tests:
        return [np.zeros(imp.shape_of(x), dtype=np.bool_)]
    return [tests[0] if len(tests) == 1 else imp.op(g.OrOp(tests[0], tests[1]))]


@converter("Shrink")
def convert_shrink(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x + bias below -lambd, x - bias above lambd, 0 between; integer tensors are computed
    exactly when lambd and bias are whole numbers, else in float32 and truncated back (as
    onnx's reference casts)."""
    a = attrs(node)
    lambd, bias = float(a.get("lambd", 0.5)), float(a.get("bias", 0.0))
    x = imp.value(node.input[0])
    el = element_type_of(x)
    exact = el == f32 or (lambd.is_integer() and bias.is_integer())
    w = x if exact else imp.op(g.CastOp(x, to="f32"))
    below = imp.op(g.LessOp(w, imp.scalar(-lambd, like=w)))
    above = imp.op(g.GreaterOp(w, imp.scalar(lambd, like=w)))
    b = imp.scalar(bias, like=w)
    inner = imp.op(g.WhereOp(above, imp.op(g.SubOp(w, b)), imp.scalar(0, like=w)))
    y = imp.op(g.WhereOp(below, imp.op(g.AddOp(w, b)), inner))
    return [y if exact else imp.op(g.CastOp(y, to=str(el)))]


@converter("Tan")
def convert_tan(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = _float_input(imp, node)
    return [imp.op(g.DivOp(imp.op(g.SinOp(x)), imp.op(g.CosOp(x))))]


def _poly(imp: Importer, z: SSAValue, coefficients: list[float]) -> SSAValue:
    """Horner's rule, highest coefficient first."""
    acc = imp.scalar(coefficients[0])
    for c in coefficients[1:]:
        acc = imp.op(g.AddOp(imp.op(g.MulOp(acc, z)), imp.scalar(c)))
    return acc


def _with_sign_of(imp: Importer, r: SSAValue, x: SSAValue) -> SSAValue:
    """r for x >= 0, -r for x < 0 (odd functions computed on |x|)."""
    return imp.op(g.WhereOp(imp.op(g.LessOp(x, imp.scalar(0.0))), imp.op(g.NegOp(r)), r))


def _log1p(imp: Importer, u: SSAValue) -> SSAValue:
    """log(1 + u) to full relative precision for small u: log(w) * u / (w - 1) with w = 1 + u
    (Goldberg's correction of the rounding in w)."""
    one = imp.scalar(1.0)
    w = imp.op(g.AddOp(u, one))
    corrected = imp.op(g.DivOp(imp.op(g.MulOp(imp.op(g.LogOp(w)), u)), imp.op(g.SubOp(w, one))))
    exact = imp.op(g.OrOp(imp.op(g.EqualOp(w, one)), imp.op(g.EqualOp(w, imp.scalar(math.inf)))))
    return imp.op(g.WhereOp(exact, imp.op(g.WhereOp(imp.op(g.EqualOp(w, one)), u, w)), corrected))


_HUGE = 2.0**28
"""Above this, sqrt(x^2 +- 1) is x in float32: asinh and acosh are log(x) + log(2) there
(before x^2 overflows)."""


def _log_2x(imp: Importer, a: SSAValue) -> SSAValue:
    return imp.op(g.AddOp(imp.op(g.LogOp(a)), imp.scalar(math.log(2.0))))


@converter("Asinh", "Acosh", "Atanh")
def convert_inverse_hyperbolic(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The inverse hyperbolic functions from log1p (accurate near 0): asinh |x| =
    log1p(a + a^2 / (1 + sqrt(1 + a^2))), acosh x = log1p(t + sqrt(2t + t^2)) with t = x - 1,
    atanh |x| = log1p(2a / (1 - a)) / 2; nan outside the domain."""
    x = _float_input(imp, node)
    one = imp.scalar(1.0)
    if node.op_type == "Acosh":
        t = imp.op(g.SubOp(x, one))
        root = imp.op(g.SqrtOp(imp.op(g.MulOp(t, imp.op(g.AddOp(t, imp.scalar(2.0)))))))
        r = _log1p(imp, imp.op(g.AddOp(t, root)))
        huge = imp.op(g.GreaterOp(x, imp.scalar(_HUGE)))
        return [imp.op(g.WhereOp(huge, _log_2x(imp, x), r))]
    a = imp.op(g.AbsOp(x))
    if node.op_type == "Atanh":
        u = imp.op(g.DivOp(imp.op(g.AddOp(a, a)), imp.op(g.SubOp(one, a))))
        return [_with_sign_of(imp, imp.op(g.MulOp(_log1p(imp, u), imp.scalar(0.5))), x)]
    a2 = imp.op(g.MulOp(a, a))
    denominator = imp.op(g.AddOp(imp.op(g.SqrtOp(imp.op(g.AddOp(a2, one)))), one))
    r = _log1p(imp, imp.op(g.AddOp(a, imp.op(g.DivOp(a2, denominator)))))
    huge = imp.op(g.GreaterOp(a, imp.scalar(_HUGE)))
    return [_with_sign_of(imp, imp.op(g.WhereOp(huge, _log_2x(imp, a), r)), x)]


# Cephes' single-precision minimax polynomials (S. L. Moshier): atanf on [0, tan(pi/8)] and
# asinf on [0, 0.5], both within 2.5e-7 relative error
_ATAN = [8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1]
_ASIN = [4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1]


def _odd_poly(imp: Importer, u: SSAValue, coefficients: list[float]) -> SSAValue:
    """u + u * z * P(z) with z = u^2."""
    z = imp.op(g.MulOp(u, u))
    return imp.op(g.AddOp(imp.op(g.MulOp(imp.op(g.MulOp(_poly(imp, z, coefficients), z)), u)), u))


def _asin_core(imp: Importer, a: SSAValue) -> tuple[SSAValue, SSAValue]:
    """For a in [0, 1]: (a > 0.5, asin(u)) where u = a, or sqrt((1 - a) / 2) if a > 0.5
    (then asin(a) = pi/2 - 2 asin(u))."""
    high = imp.op(g.GreaterOp(a, imp.scalar(0.5)))
    half_rest = imp.op(g.MulOp(imp.op(g.SubOp(imp.scalar(1.0), a)), imp.scalar(0.5)))
    u = imp.op(g.WhereOp(high, imp.op(g.SqrtOp(half_rest)), a))
    return high, _odd_poly(imp, u, _ASIN)


@converter("Atan")
def convert_atan(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Cephes atanf: |x| reduced to [0, tan(pi/8)] by atan a = pi/2 + atan(-1/a) (a > tan(3pi/8))
    or pi/4 + atan((a - 1)/(a + 1)) (a > tan(pi/8)), then an odd polynomial."""
    x = _float_input(imp, node)
    a = imp.op(g.AbsOp(x))
    one = imp.scalar(1.0)
    big = imp.op(g.GreaterOp(a, imp.scalar(2.414213562373095)))
    mid = imp.op(g.GreaterOp(a, imp.scalar(0.4142135623730950)))
    inv = imp.op(g.NegOp(imp.op(g.DivOp(one, a))))
    moebius = imp.op(g.DivOp(imp.op(g.SubOp(a, one)), imp.op(g.AddOp(a, one))))
    u = imp.op(g.WhereOp(big, inv, imp.op(g.WhereOp(mid, moebius, a))))
    base = imp.op(
        g.WhereOp(
            big,
            imp.scalar(math.pi / 2),
            imp.op(g.WhereOp(mid, imp.scalar(math.pi / 4), imp.scalar(0.0))),
        )
    )
    return [_with_sign_of(imp, imp.op(g.AddOp(base, _odd_poly(imp, u, _ATAN))), x)]


@converter("Asin")
def convert_asin(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Cephes asinf: a polynomial on [0, 0.5], asin a = pi/2 - 2 asin(sqrt((1 - a)/2))
    above; nan for |x| > 1."""
    x = _float_input(imp, node)
    high, p = _asin_core(imp, imp.op(g.AbsOp(x)))
    folded = imp.op(g.SubOp(imp.scalar(math.pi / 2), imp.op(g.AddOp(p, p))))
    return [_with_sign_of(imp, imp.op(g.WhereOp(high, folded, p)), x)]


@converter("Acos")
def convert_acos(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Cephes acosf: 2 asin(sqrt((1 - x)/2)) for x > 0.5, pi - that of -x for x < -0.5,
    pi/2 - asin x between; nan for |x| > 1."""
    x = _float_input(imp, node)
    high, p = _asin_core(imp, imp.op(g.AbsOp(x)))
    twice = imp.op(g.AddOp(p, p))
    neg = imp.op(g.LessOp(x, imp.scalar(0.0)))
    outer = imp.op(g.WhereOp(neg, imp.op(g.SubOp(imp.scalar(math.pi), twice)), twice))
    inner = imp.op(g.SubOp(imp.scalar(math.pi / 2), _with_sign_of(imp, p, x)))
    return [imp.op(g.WhereOp(high, outer, inner))]
