"""convert-arith-to-llvm: arith ops on scalars and 1-D vectors -> llvm ops (index -> i64)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.utils.hints import isa

from dialects import llvm_extras
from passes.conversions.llvm_common import convert_type, operands, replace, rewrite_once

# The tables map an arith op class to the constructor of its llvm counterpart; typing the values
# as constructor signatures (not `type[Operation]`) lets the calls below be checked.
_BinaryCtor = Callable[[SSAValue, SSAValue], Operation]
_FloatBinaryCtor = Callable[[SSAValue, SSAValue, llvm.FastMathAttr], Operation]
_CastCtor = Callable[[SSAValue, Attribute], Operation]

_BINARY: dict[type[Operation], _BinaryCtor] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

_FLOAT_BINARY: dict[type[Operation], _FloatBinaryCtor] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

# NaN-propagating (IEEE maximum) vs NaN-ignoring (maxnum) semantics, as in MLIR.
_FLOAT_INTRINSIC: dict[type[Operation], str] = {
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
}
_FLOAT_NUM: dict[type[Operation], _FloatBinaryCtor] = {
    arith.MaxnumfOp: llvm.VectorFMaxOp,
    arith.MinnumfOp: llvm.VectorFMinOp,
}

# integer min/max as LLVM's intrinsics (scalars and vectors alike: xDSL's llvm.select takes a
# scalar condition only, so icmp + select would not do for vectors)
_INT_MINMAX: dict[type[Operation], str] = {
    arith.MinSIOp: "llvm.smin",
    arith.MaxSIOp: "llvm.smax",
    arith.MinUIOp: "llvm.umin",
    arith.MaxUIOp: "llvm.umax",
}

_CASTS: dict[type[Operation], _CastCtor] = {
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: llvm_extras.UIToFPOp,
    arith.FPToSIOp: llvm_extras.FPToSIOp,
    arith.FPToUIOp: llvm_extras.FPToUIOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.BitcastOp: llvm.BitcastOp,
}
"""The casts: one llvm op of the operand and the converted result type each."""


def _fastmath(op: Operation) -> llvm.FastMathAttr:
    """arith fastmath flags carried over to the llvm op (same flag names)."""
    fm = op.properties.get("fastmath")
    flags = getattr(fm, "data", None) or ()
    names = {f.value if hasattr(f, "value") else str(f) for f in flags}
    if "fast" in names:
        return llvm.FastMathAttr("fast")
    return llvm.FastMathAttr([f for f in FastMathFlag if f.value in names])


def _predicate(op: arith.CmpfOp | arith.CmpiOp) -> IntegerAttr[IntegerType]:
    """The comparison predicate (an i64 attribute, the same numbering in arith and llvm)."""
    pred = op.predicate
    if not isa(pred, IntegerAttr[IntegerType]):
        raise TypeError(f"{op.name}: expected an integer predicate, got {pred}")
    return pred


def _int_width(type: Attribute) -> int:
    t = convert_type(type)
    if isinstance(t, VectorType):
        t = t.element_type
    if not isinstance(t, IntegerType):
        raise TypeError(f"expected an integer (or integer vector) type, got {type}")
    return t.width.data


class ArithToLLVM(RewritePattern):
    """One pattern for every arith op: a table lookup, then op-specific construction."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() != "arith":
            return
        new = self._convert(op, rewriter)
        if new is None:
            return
        if not new:  # a no-op after type conversion (index_cast between index and i64)
            replace(rewriter, op, [], [operands(rewriter, op)[0]])
            return
        replace(rewriter, op, new, [new[-1].results[0]])

    def _convert(self, op: Operation, rewriter: PatternRewriter) -> list[Operation] | None:
        if isinstance(op, arith.ConstantOp):
            return [_constant(op)]
        if not op.results:  # every arith op has a result; nothing to convert otherwise
            return None
        t = type(op)
        res_type = convert_type(op.results[0].type)
        args = operands(rewriter, op)
        if t in _BINARY:
            return [_BINARY[t](args[0], args[1])]
        if t in _FLOAT_BINARY:
            return [_FLOAT_BINARY[t](args[0], args[1], _fastmath(op))]
        if t in _FLOAT_NUM:
            return [_FLOAT_NUM[t](args[0], args[1], _fastmath(op))]
        if t in _FLOAT_INTRINSIC:
            return [llvm.CallIntrinsicOp(_FLOAT_INTRINSIC[t], args, [res_type])]
        if t in _INT_MINMAX:
            return [llvm.CallIntrinsicOp(_INT_MINMAX[t], args, [res_type])]
        if isinstance(op, arith.NegfOp):
            return [llvm.FNegOp(args[0], _fastmath(op))]
        if isinstance(op, arith.CmpfOp):
            return [llvm.FCmpOp(args[0], args[1], _predicate(op))]
        if isinstance(op, arith.CmpiOp):
            return [llvm.ICmpOp(args[0], args[1], _predicate(op))]
        if isinstance(op, arith.SelectOp):
            return [llvm.SelectOp(*args)]
        if isinstance(op, arith.IndexCastOp):
            return _int_resize(args[0], res_type, signed=isinstance(op, arith.IndexCastOp))
        if t in _CASTS:
            return [_CASTS[t](args[0], res_type)]
        return None


def _int_resize(value: SSAValue, res_type: Attribute, *, signed: bool) -> list[Operation]:
    src, dst = _int_width(value.type), _int_width(res_type)
    if src == dst:
        return []
    if src > dst:
        return [llvm.TruncOp(value, res_type)]
    return [llvm.SExtOp(value, res_type) if signed else llvm.ZExtOp(value, res_type)]


def _constant(op: arith.ConstantOp) -> Operation:
    """Constants first: index constants become i64 before anything else sees them."""
    value = op.value
    res_type = convert_type(op.result.type)
    if isinstance(value, IntegerAttr) and isinstance(value.type, IndexType):
        assert isinstance(res_type, IntegerType)  # convert_type: index -> i64
        value = IntegerAttr(value.value.data, res_type)
    elif isa(value, DenseIntOrFPElementsAttr[IndexType]):
        assert isa(res_type, VectorType[IntegerType])  # convert_type: vector<index> -> i64
        value = DenseIntOrFPElementsAttr.from_list(res_type, list(value.get_values()))
    return llvm.ConstantOp(value, res_type)


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lower arith to llvm; not-yet-converted neighbours are bridged by unrealized casts."""

    name: ClassVar[str] = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [ArithToLLVM()])
