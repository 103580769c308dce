"""convert-math-to-llvm: math ops -> LLVM intrinsics, libm calls, or inline expansions.

Ops with an LLVM intrinsic use it. erf and tanh have none: scalars call libm (`erff`,
`tanhf`); vectors get a clamped odd/even rational approximation (Eigen's float kernels, max abs
error about 4e-7) so they stay in vector registers instead of 16 scalar libm calls per vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from passes.conversions.llvm_common import (
    const_float,
    convert_type,
    declare_function,
    operands,
    replace,
)

# math op class -> constructor of the llvm intrinsic op (typed as the call made below)
_UNARY: dict[type[Operation], Callable[[SSAValue], Operation]] = {
    math.ExpOp: llvm.FExpOp,
    math.LogOp: llvm.FLogOp,
    math.SqrtOp: llvm.FSqrtOp,
    math.Exp2Op: llvm.FExp2Op,
    math.Log2Op: llvm.FLog2Op,
    math.FloorOp: llvm.FFloorOp,
    math.CeilOp: llvm.FCeilOp,
    math.SinOp: llvm.FSinOp,
    math.CosOp: llvm.FCosOp,
}
_INTRINSIC: dict[type[Operation], str] = {
    math.Log10Op: "llvm.log10",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.TanOp: "llvm.tan",
}
# scalar libm fallbacks (f32 names)
_LIBM: dict[type[Operation], str] = {
    math.ErfOp: "erff",
    math.TanhOp: "tanhf",
    math.Log1pOp: "log1pf",
    math.ExpM1Op: "expm1f",
    math.AtanOp: "atanf",
    math.Atan2Op: "atan2f",
    math.AsinOp: "asinf",
    math.AcosOp: "acosf",
    math.SinhOp: "sinhf",
    math.CoshOp: "coshf",
    math.AsinhOp: "asinhf",
    math.AcoshOp: "acoshf",
    math.AtanhOp: "atanhf",
    math.CbrtOp: "cbrtf",
}

_ERF_P = (
    -1.60960333262415e-02,
    -2.95459980854025e-03,
    -7.34990630326855e-04,
    -5.69250639462346e-05,
    -2.10102402082508e-06,
    2.77068142495902e-08,
    -2.72614225801306e-10,
)
_ERF_Q = (
    -1.42647390514189e-02,
    -7.37332916720468e-03,
    -1.68282697438203e-03,
    -2.13374055278905e-04,
    -1.45660718464996e-05,
)
_TANH_P = (
    4.89352455891786e-03,
    6.37261928875436e-04,
    1.48572235717979e-05,
    5.12229709037114e-08,
    -8.60467152213735e-11,
    2.00018790482477e-13,
    -2.76076847742355e-16,
)
_TANH_Q = (
    4.89352518554385e-03,
    2.26843463243900e-03,
    1.18534705686654e-04,
    1.19825839466702e-06,
)


def _rational_odd(
    x: SSAValue, clamp: float, p: Sequence[float], q: Sequence[float]
) -> tuple[list[Operation], SSAValue]:
    """x' = clamp(x); x' * P(x'^2) / Q(x'^2), Horner with FMAs."""
    t: Attribute = x.type
    ops: list[Operation] = []

    def c(v: float) -> SSAValue:
        k = const_float(v, t)
        ops.append(k)
        return k.result

    lo = llvm.VectorFMaxOp(x, c(-clamp))
    ops.append(lo)
    xc = llvm.VectorFMinOp(lo.res, c(clamp))
    ops.append(xc)
    x2 = llvm.FMulOp(xc.res, xc.res)
    ops.append(x2)

    def horner(coeffs: Sequence[float]) -> SSAValue:
        acc = c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            fma = llvm.FMAOp(x2.res, acc, c(k))
            ops.append(fma)
            acc = fma.res
        return acc

    num = llvm.FMulOp(xc.res, horner(p))
    ops.append(num)
    div = llvm.FDivOp(num.res, horner(q))
    ops.append(div)
    return ops, div.res


class MathToLLVM(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() != "math":
            return
        t = type(op)
        args = operands(rewriter, op)
        res_type = convert_type(op.results[0].type)
        is_vector = isinstance(res_type, VectorType)
        new: list[Operation]
        if isinstance(op, math.AbsFOp):
            new = [llvm.FAbsOp(args[0], res_type)]
        elif t in _UNARY:
            new = [_UNARY[t](args[0])]
        elif isinstance(op, math.PowFOp):
            new = [llvm.FPowOp(args[0], args[1])]
        elif isinstance(op, math.FmaOp):
            new = [llvm.FMAOp(args[0], args[1], args[2])]
        elif isinstance(op, math.CopySignOp):
            new = [llvm.FCopySignOp(args[0], args[1])]
        elif isinstance(op, math.RsqrtOp):
            one = const_float(1.0, res_type)
            sqrt = llvm.FSqrtOp(args[0])
            new = [one, sqrt, llvm.FDivOp(one.result, sqrt.res)]
        elif t in _INTRINSIC:
            new = [llvm.CallIntrinsicOp(_INTRINSIC[t], args, [res_type])]
        elif isinstance(op, math.ErfOp) and is_vector:
            new, res = _rational_odd(args[0], 4.0, _ERF_P, _ERF_Q)
            replace(rewriter, op, new, [res])
            return
        elif isinstance(op, math.TanhOp) and is_vector:
            new, res = _rational_odd(args[0], 7.90531110763549805, _TANH_P, _TANH_Q)
            replace(rewriter, op, new, [res])
            return
        elif t in _LIBM and not is_vector:
            name = _LIBM[t]
            module = op.get_toplevel_object()
            assert isinstance(module, ModuleOp)
            declare_function(module, name, [a.type for a in args], res_type)
            new = [llvm.CallOp(name, *args, return_type=res_type)]
        else:
            raise NotImplementedError(f"convert-math-to-llvm: {op.name} on {res_type}")
        replace(rewriter, op, new, [new[-1].results[0]])


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower math ops on f32 scalars and 1-D vectors."""

    name: ClassVar[str] = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MathToLLVM()]), apply_recursively=False
        ).rewrite_module(op)
