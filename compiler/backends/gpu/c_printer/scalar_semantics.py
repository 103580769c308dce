"""The C text of scalars: exact literals, and elementwise arith / math ops with MLIR's semantics
kept (integers wrap and take the op's signedness, NaN-aware comparisons, conversions). A base
class of the function printer, apart because it depends only on the flavour, not on the
function being printed (no SSA names, no lines)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.c_types import _Elem
from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.flavour import _Flavour
from compiler.backends.gpu.c_printer.op_tables import (
    _CMPF,
    _CMPF_NAMES,
    _CMPI_NAMES,
    _CMPI_OPERATORS,
    _FLOAT_OPERATORS,
    _MATH_BINARY,
    _MATH_UNARY,
    _predicate,
)


def _float_literal(value: float, bits: int) -> str:
    """An exact C literal: the shortest decimal that reads back as the same f32 (or f64)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    if bits == 32:
        f = np.float32(value)
        if f != 0 and not 1e-4 <= abs(f) < 1e16:
            text = np.format_float_scientific(f, unique=True, trim="0") + "f"
        else:
            text = np.format_float_positional(f, unique=True, trim="0") + "f"
    else:
        text = repr(float(value))
        if not any(c in text for c in ".e"):
            text += ".0"
    return f"({text})" if text.startswith("-") else text


class _ScalarSemantics:
    """The C text of scalar values and elementwise ops (a base of _FunctionPrinter): it depends
    only on the flavour `fl`, not on the function being printed."""

    fl: _Flavour

    def int_literal(self, value: int, e: _Elem) -> str:
        if e.is_bool:
            return "1" if value & 1 else "0"
        if e.is_index:
            if not -(2**31) <= value < 2**31:
                raise _Unsupported(f"index constant {value} does not fit the C int of indices")
            return f"({value})" if value < 0 else str(value)
        value = (value + 2 ** (e.bits - 1)) % 2**e.bits - 2 ** (e.bits - 1)  # as signed
        suffix = self.fl.long_suffix if e.bits == 64 else ""
        if e.bits in (32, 64) and value == -(2 ** (e.bits - 1)):
            return f"(-{2 ** (e.bits - 1) - 1}{suffix} - 1)"
        return f"({value}{suffix})" if value < 0 else f"{value}{suffix}"

    def literal(self, value: float | int, e: _Elem) -> str:
        if e.is_float:
            return _float_literal(float(value), e.bits)
        return self.int_literal(int(value), e)

    # ------------------------------------------------------------------- scalar semantics
    def signed(self, x: str, e: _Elem) -> str:
        return f"(-{x})" if e.is_bool else x

    def unsigned(self, x: str, e: _Elem) -> str:
        return x if e.is_bool else f"({self.fl.utype(e)}){x}"

    def wrap(self, text: str, e: _Elem) -> str:
        """An integer result back in e's C type (i1: the low bit)."""
        if e.is_bool:
            return f"(({text}) & 1)"
        return f"({self.fl.ctype(e)})({text})"

    def scalar(
        self,
        name: str,
        xs: Sequence[str],
        es: Sequence[_Elem],
        out: _Elem,
        op: Operation | None = None,
    ) -> str:
        """The C text of elementwise op `name` on scalar operands `xs` (C expressions) of types
        `es`, giving `out`; `op` carries the comparison predicates."""
        fl = self.fl
        e = es[0] if es else out
        if name in _FLOAT_OPERATORS:
            return f"{xs[0]} {_FLOAT_OPERATORS[name]} {xs[1]}"
        if name == "arith.negf":
            return f"-{xs[0]}"
        if name in _MATH_UNARY:
            return f"{fl.math(_MATH_UNARY[name], e)}({xs[0]})"
        if name in _MATH_BINARY:
            return f"{fl.math(_MATH_BINARY[name], e)}({xs[0]}, {xs[1]})"
        if name in ("arith.maximumf", "arith.minimumf"):
            return fl.maximumf(e, xs[0], xs[1], name == "arith.maximumf")
        if name in ("math.isnan", "math.isinf", "math.isfinite"):
            return f"{name.split('.')[1]}({xs[0]})"
        if name == "math.fpowi":
            return fl.fpowi(e, xs[0], xs[1])
        if name == "arith.cmpf":
            predicate = _CMPF_NAMES[_predicate(op)]
            if predicate in ("false", "true"):
                return "1" if predicate == "true" else "0"
            return _CMPF[predicate].format(a=xs[0], b=xs[1])
        if name == "arith.cmpi":
            return self.cmpi(_CMPI_NAMES[_predicate(op)], xs[0], xs[1], e)
        if name == "arith.select":
            return f"{xs[0]} ? {xs[1]} : {xs[2]}"
        return self.integer_or_cast(name, xs, es, out)

    def cmpi(self, predicate: str, a: str, b: str, e: _Elem) -> str:
        operator = _CMPI_OPERATORS[predicate[-2:]]
        if predicate.startswith("s"):
            a, b = self.signed(a, e), self.signed(b, e)
        elif predicate.startswith("u"):
            a, b = self.unsigned(a, e), self.unsigned(b, e)
        return f"({a} {operator} {b})"

    def integer_or_cast(self, name: str, xs: Sequence[str], es: Sequence[_Elem], out: _Elem) -> str:
        fl = self.fl
        e = es[0]
        a = xs[0]
        b = xs[1] if len(xs) > 1 else ""
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            operator = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}[name]
            if e.is_index:
                return f"{a} {operator} {b}"
            if e.is_bool:
                return f"({a} & {b})" if operator == "*" else f"({a} ^ {b})"
            return self.wrap(f"{self.unsigned(a, e)} {operator} {self.unsigned(b, e)}", e)
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            operator = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[name]
            return f"({a} {operator} {b})"
        if name == "arith.divsi":
            return f"{a} / {b}"
        if name == "arith.remsi":
            return f"{a} % {b}"
        if name in ("arith.divui", "arith.remui"):
            operator = "/" if name == "arith.divui" else "%"
            return self.wrap(f"{self.unsigned(a, e)} {operator} {self.unsigned(b, e)}", e)
        if name == "arith.ceildivsi":
            return self.wrap(f"{a} / {b} + ({a} % {b} != 0 && ({a} < 0) == ({b} < 0))", e)
        if name == "arith.floordivsi":
            return self.wrap(f"{a} / {b} - ({a} % {b} != 0 && ({a} < 0) != ({b} < 0))", e)
        if name == "arith.ceildivui":
            ua, ub = self.unsigned(a, e), self.unsigned(b, e)
            return self.wrap(f"{ua} / {ub} + ({ua} % {ub} != 0)", e)
        if name == "arith.shli":
            return self.wrap(f"{self.unsigned(a, e)} << {b}", e)
        if name == "arith.shrsi":
            return f"{a} >> {b}" if not e.is_bool else a
        if name == "arith.shrui":
            return self.wrap(f"{self.unsigned(a, e)} >> {b}", e)
        if name in ("arith.maxsi", "arith.minsi"):
            operator = ">" if name == "arith.maxsi" else "<"
            return f"({self.signed(a, e)} {operator} {self.signed(b, e)} ? {a} : {b})"
        if name in ("arith.maxui", "arith.minui"):
            operator = ">" if name == "arith.maxui" else "<"
            return f"({self.unsigned(a, e)} {operator} {self.unsigned(b, e)} ? {a} : {b})"
        if name == "math.absi":
            if e.is_bool:
                return a
            return self.wrap(f"{a} < 0 ? -{self.unsigned(a, e)} : {self.unsigned(a, e)}", e)
        # conversions: `out` is the result's element type
        to = fl.ctype(out)
        if name in ("arith.index_cast", "arith.extsi", "arith.sitofp"):
            return self.convert(self.signed(a, e), out, None if e.is_bool else e)
        if name in ("arith.index_castui", "arith.extui", "arith.uitofp"):
            if e.is_bool or fl.ctype(e) == fl.ctype(out):  # i1 is 0 / 1 already; index <-> i32
                return self.convert(a, out, e)
            return self.convert(self.unsigned(a, e), out)
        if name == "arith.trunci":
            return self.convert(a, out, e)
        if name == "arith.fptosi":
            return f"((int){a} & 1)" if out.is_bool else f"({to}){a}"
        if name == "arith.fptoui":
            return f"(({fl.utype(out)}){a} & 1)" if out.is_bool else f"({to})({fl.utype(out)}){a}"
        if name in ("arith.extf", "arith.truncf"):
            return f"({to}){a}"
        if name == "arith.bitcast":
            if e == out or (not e.is_float and not out.is_float):
                return self.convert(a, out, e)
            if e.bits != out.bits or e.is_index or out.is_index:
                raise _Unsupported(f"bitcast between {e.kind}{e.bits} and {out.kind}{out.bits}")
            return fl.bitcast(e, out, a)
        raise _Unsupported("the op has no C translation")

    def convert(self, text: str, out: _Elem, source: _Elem | None = None) -> str:
        """`text` (of type `source`) converted to `out`."""
        if out.is_bool:
            return text if source is not None and source.is_bool else f"(({text}) & 1)"
        if (
            source is not None
            and not source.is_bool
            and self.fl.ctype(source) == self.fl.ctype(out)
        ):
            return text
        return f"({self.fl.ctype(out)})({text})"
