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
    CAST_TARGETS,
    SUPPORTED_ELEMENTS,
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    results,
    text,
    type_name,
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


@converter("Cast", "CastLike")
def convert_cast(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if node.op_type == "CastLike":
        like = imp.lookup(node.input[1])
        to_el = element_type_of(like) if isinstance(like, SSAValue) else None
        target = str(to_el) if to_el is not None else None
        if target is None:
            assert isinstance(like, np.ndarray)
            target = str(g.dense_attr(like).get_element_type())
    else:
        to = attrs(node)["to"]
        if to not in CAST_TARGETS:
            raise imp.error(
                f"cast of a computed tensor to {type_name(to)} is not supported (to "
                f"{SUPPORTED_ELEMENTS} only)"
            )
        target = CAST_TARGETS[to]
    return results(imp.emit(g.CastOp(imp.value(node.input[0]), to=target)))


@converter("Dropout")
def convert_dropout(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if imp.has(node, 2):  # opset 12+: training_mode input; inference (identity) unless true
        training = bool(imp.scalar_input(node, 2, "training_mode"))
        ratio = imp.scalar_input(node, 1, "ratio") if imp.has(node, 1) else 0.5
        if training and ratio != 0.0:
            raise imp.error("training_mode=1 (random dropout) is not supported (inference only)")
    y = imp.op(g.DropoutOp(imp.value(node.input[0])))
    return [y, np.ones(imp.shape_of(y), dtype=np.bool_)]  # inference keeps every element
