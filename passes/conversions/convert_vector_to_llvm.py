"""convert-vector-to-llvm: 1-D vector ops -> llvm vector instructions and intrinsics.

Loads/stores get an explicit alignment (the element size: numpy only guarantees that much for
views), reductions use reassociating intrinsics so LLVM emits a tree reduction, not a chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    ModuleOp,
    VectorType,
    i32,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects.llvm_extras import ExtractElementOp
from passes.conversions.llvm_common import (
    const_float,
    const_int,
    convert_type,
    lower_load,
    lower_store,
    operand,
    operands,
    replace,
    rewrite_once,
)

_REASSOC = llvm.FastMathAttr([FastMathFlag.REASSOC])


def _check_1d(type: object) -> VectorType:
    if not isinstance(type, VectorType) or type.get_num_dims() != 1:
        raise NotImplementedError(f"only 1-D vectors are supported, got {type}")
    return type


class LoadLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.LoadOp, rewriter: PatternRewriter) -> None:
        lower_load(rewriter, op, op.base.type, op.result.type)


class StoreLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.StoreOp, rewriter: PatternRewriter) -> None:
        lower_store(rewriter, op, op.base.type)


def splat(value: SSAValue, vtype: VectorType) -> tuple[list[Operation], SSAValue]:
    """insertelement into lane 0 + zero-mask shufflevector (what LLVM matches to a broadcast)."""
    undef = llvm.UndefOp(vtype)
    zero = const_int(0, i32)
    ins = llvm.InsertElementOp(undef.res, value, zero.result)
    n = vtype.get_shape()[0]
    shuf = llvm.ShuffleVectorOp(ins.res, ins.res, DenseArrayBase.from_list(i32, [0] * n), vtype)
    return [undef, zero, ins, shuf], shuf.res


class BroadcastLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.BroadcastOp, rewriter: PatternRewriter) -> None:
        vtype = _check_1d(convert_type(op.vector.type))
        src = operand(rewriter, op, op.source)
        if isinstance(src.type, VectorType):
            if src.type != vtype:
                raise NotImplementedError(f"broadcast {src.type} -> {vtype}")
            replace(rewriter, op, [], [src])
            return
        ops, res = splat(src, vtype)
        replace(rewriter, op, ops, [res])


class FMALowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.FMAOp, rewriter: PatternRewriter) -> None:
        a, b, c = operands(rewriter, op)
        fma = llvm.FMAOp(a, b, c)
        replace(rewriter, op, [fma], [fma.res])


class ReductionLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ReductionOp, rewriter: PatternRewriter) -> None:
        vec = operand(rewriter, op, op.vector)
        acc = operand(rewriter, op, op.acc) if op.acc is not None else None
        vtype = _check_1d(vec.type)
        etype = vtype.element_type
        kind = op.kind.data.value if hasattr(op.kind.data, "value") else str(op.kind.data)
        ops: list[Operation]
        res: SSAValue
        if kind in ("add", "mul"):
            # the ordered reduction from the identity (reassociable), then `acc` combined in
            start = const_float(0.0 if kind == "add" else 1.0, etype)
            reduce = (llvm.VectorReduceFAddOp if kind == "add" else llvm.VectorReduceFMulOp)(
                start.result, vec, _REASSOC
            )
            ops, res = [start, reduce], reduce.res
            if acc is not None:
                combine = (llvm.FAddOp if kind == "add" else llvm.FMulOp)(acc, res)
                ops, res = [*ops, combine], combine.res
        elif kind in ("maximumf", "minimumf", "maxnumf", "minnumf"):
            name = {
                "maximumf": "llvm.vector.reduce.fmaximum",
                "minimumf": "llvm.vector.reduce.fminimum",
                "maxnumf": "llvm.vector.reduce.fmax",
                "minnumf": "llvm.vector.reduce.fmin",
            }[kind]
            red = llvm.CallIntrinsicOp(name, [vec], [etype])
            ops, res = [red], red.results[0]
            if acc is not None:
                scalar = "llvm.maximum" if kind.startswith("max") else "llvm.minimum"
                if kind.endswith("numf"):
                    scalar = "llvm.maxnum" if kind.startswith("max") else "llvm.minnum"
                comb = llvm.CallIntrinsicOp(scalar, [acc, res], [etype])
                ops, res = [*ops, comb], comb.results[0]
        else:
            raise NotImplementedError(f"vector.reduction <{kind}>")
        replace(rewriter, op, ops, [res])


def _static_lane(op: vector.ExtractOp | vector.InsertOp) -> llvm.ConstantOp:
    """The lane `op` addresses, as an i64 constant (one static position only)."""
    pos = list(op.static_position.get_values())
    if op.dynamic_position or len(pos) != 1:
        raise NotImplementedError(f"{op.name}: one static position only")
    return const_int(pos[0])


class ExtractLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ExtractOp, rewriter: PatternRewriter) -> None:
        vec = operand(rewriter, op, op.vector)
        _check_1d(vec.type)
        idx = _static_lane(op)
        ext = ExtractElementOp(vec, idx.result)
        replace(rewriter, op, [idx, ext], [ext.res])


class InsertLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.InsertOp, rewriter: PatternRewriter) -> None:
        src = operand(rewriter, op, op.source)
        dest = operand(rewriter, op, op.dest)
        _check_1d(dest.type)
        idx = _static_lane(op)
        ins = llvm.InsertElementOp(dest, src, idx.result)
        replace(rewriter, op, [idx, ins], [ins.res])


class ShuffleLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ShuffleOp, rewriter: PatternRewriter) -> None:
        v1, v2 = operands(rewriter, op)
        _check_1d(v1.type)
        mask = DenseArrayBase.from_list(i32, list(op.mask.get_values()))
        res_type = convert_type(op.result.type)
        shuf = llvm.ShuffleVectorOp(v1, v2, mask, res_type)
        replace(rewriter, op, [shuf], [shuf.res])


@dataclass(frozen=True)
class ConvertVectorToLLVMPass(ModulePass):
    """Lower 1-D vector ops to llvm; memref/index operands are bridged by unrealized casts."""

    name: ClassVar[str] = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(
            op,
            [
                LoadLowering(),
                StoreLowering(),
                BroadcastLowering(),
                FMALowering(),
                ReductionLowering(),
                ExtractLowering(),
                InsertLowering(),
                ShuffleLowering(),
            ],
        )
