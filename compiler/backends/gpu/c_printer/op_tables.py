"""Which arith / math ops are which C text: the one-function math ops, the float operators and
the comparison predicates, with `_op_name` and `_predicate` to read them off an op. Shared by the
flavours (which decide whole-vector forms) and the scalar translation, so apart from both."""

from __future__ import annotations

from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    IntegerAttr,
    UnregisteredOp,
)
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.errors import _Unsupported

_MATH_UNARY = {
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.log": "log",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.log1p": "log1p",
    "math.expm1": "expm1",
    "math.sqrt": "sqrt",
    "math.rsqrt": "rsqrt",
    "math.cbrt": "cbrt",
    "math.tanh": "tanh",
    "math.erf": "erf",
    "math.erfc": "erfc",
    "math.absf": "fabs",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",
    "math.roundeven": "rint",
    "math.trunc": "trunc",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
}
"""math ops that are one C math function of one argument (OpenCL name; CUDA adds `f` for f32)."""

_MATH_BINARY = {
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.copysign": "copysign",
    "arith.remf": "fmod",
    "arith.maxnumf": "fmax",
    "arith.minnumf": "fmin",
}
"""Ops that are one C math function of two arguments (maxnum/minnum ignore a NaN operand, as
C's fmax/fmin do)."""

_FLOAT_OPERATORS = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}

_CMPF = {
    "oeq": "({a} == {b})",
    "ogt": "({a} > {b})",
    "oge": "({a} >= {b})",
    "olt": "({a} < {b})",
    "ole": "({a} <= {b})",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "({a} != {b})",
    "uno": "({a} != {a} || {b} != {b})",
}
"""arith.cmpf predicates as C: C's comparisons are false on NaN (ordered), their negations true
(unordered); `!=` is true on NaN. In OpenCL the same text on float vectors gives 0 / -1 masks."""

_CMPF_NAMES = CMPF_COMPARISON_OPERATIONS  # in MLIR's predicate order
_CMPI_NAMES = CMPI_COMPARISON_OPERATIONS
_CMPI_OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _op_name(op: Operation) -> str:
    """The op's name; for an op xDSL does not define (math.isnan, arith.remf, ...) the name it
    was parsed with (when the context allows unregistered ops)."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _predicate(op: Operation | None) -> int:
    attr = None if op is None else op.properties.get("predicate")
    if not isinstance(attr, IntegerAttr):
        raise _Unsupported("the comparison has no predicate")
    return attr.value.data
