"""Handlers of the elementwise arith and math ops (whole vectors where the flavour allows, else
lane by lane, through the scalar translation) and of arith.constant."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
)
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter, _handles
from compiler.backends.gpu.c_printer.op_tables import (
    _FLOAT_OPERATORS,
    _MATH_BINARY,
    _MATH_UNARY,
    _op_name,
)

_ELEMENTWISE = (
    *_FLOAT_OPERATORS,
    *_MATH_UNARY,
    *_MATH_BINARY,
    "arith.negf",
    "arith.maximumf",
    "arith.minimumf",
    "math.isnan",
    "math.isinf",
    "math.isfinite",
    "math.fpowi",
    "math.absi",
    "arith.cmpf",
    "arith.cmpi",
    "arith.select",
    "arith.addi",
    "arith.subi",
    "arith.muli",
    "arith.andi",
    "arith.ori",
    "arith.xori",
    "arith.divsi",
    "arith.divui",
    "arith.remsi",
    "arith.remui",
    "arith.ceildivsi",
    "arith.ceildivui",
    "arith.floordivsi",
    "arith.shli",
    "arith.shrsi",
    "arith.shrui",
    "arith.maxsi",
    "arith.minsi",
    "arith.maxui",
    "arith.minui",
    "arith.index_cast",
    "arith.index_castui",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "arith.extf",
    "arith.truncf",
    "arith.extsi",
    "arith.extui",
    "arith.trunci",
    "arith.bitcast",
)


@_handles(*_ELEMENTWISE)
def _elementwise(p: _FunctionPrinter, op: Operation) -> None:
    name = _op_name(op)
    if len(op.results) != 1:
        raise _Unsupported("expected one result")
    result = op.results[0]
    es = [p.scalar_of(x.type) for x in op.operands]
    out = p.scalar_of(result.type)
    xs = [p.expr(x) for x in op.operands]
    v = p.vec(result.type)
    if v is None or v.storage == 1:
        p.define(result, p.scalar(name, xs, es, out, op))
        return
    vecs = [p.vec(x.type) for x in op.operands]
    if name == "arith.select" and vecs[0] is not None and vecs[0].storage > 1:
        if p.fl.name == "opencl" and v.elem.bits == 32:  # a 32-bit lane is selected by an int mask
            p.define(result, f"select({xs[2]}, {xs[1]}, {xs[0]})")
            return
    elif p.fl.native(op, es):
        p.define(result, p.scalar(name, xs, es, out, op))
        return
    lanes = []
    for i in range(v.lanes):
        args = [x if w is None else p.lane_get(x, w, i) for x, w in zip(xs, vecs)]
        lanes.append(p.scalar(name, args, es, out, op))
    p.define(result, p.construct(v, lanes))


@_handles("arith.constant")
def _constant(p: _FunctionPrinter, op: Operation) -> None:
    result = op.results[0]
    value = op.properties.get("value", op.attributes.get("value"))
    if isinstance(value, IntegerAttr | FloatAttr):
        e = p.element(result.type)
        number = value.value.data
        p.names[result] = p.literal(number, e)
        if isinstance(value, IntegerAttr):
            p.ints[result] = int(number)
        return
    if isinstance(value, DenseIntOrFPElementsAttr):
        v = p.vec(result.type)
        if v is None:
            raise _Unsupported(f"a dense constant of type {result.type} is not a vector")
        values = list(value.get_values())
        if len(values) == 1 or value.is_splat():
            text = p.literal(values[0], v.elem)
            if v.storage == 1:
                p.names[result] = text
                return
            p.define(result, p.fl.splat(v, p.lane_put(text, v)))
            return
        if v.storage == 1:
            p.names[result] = p.literal(values[0], v.elem)
            return
        p.define(result, p.construct(v, [p.literal(x, v.elem) for x in values]))
        return
    raise _Unsupported(f"constant {value} is not a number or a dense vector")
