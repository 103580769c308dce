"""convert-math-to-llvm: math ops -> LLVM intrinsics, libm calls, or inline expansions.

Ops with an LLVM intrinsic use it. erf and tanh have none: scalars call libm (`erff`,
`tanhf`). exp (scalar too) and, on vectors, erf and tanh are expanded inline
(passes/conversions/vector_math.py) so they stay in vector registers: LLVM would otherwise make 16 scalar libm calls per vector
(measured: a Sigmoid of 64x112x112 took 7.8x onnxruntime's time that way).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.utils.exceptions import DiagnosticException

from passes.conversions.llvm_common import (
    const_float,
    convert_type,
    declare_function,
    operands,
    replace,
    rewrite_once,
)
from passes.conversions.vector_math import ERF, TANH, inline_exp
from passes.schedule.cpu_target import cpu_target

# math op class -> constructor of the llvm intrinsic op (typed as the call made below)
_UNARY: dict[type[Operation], Callable[[SSAValue], Operation]] = {
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


_INLINE = {math.ErfOp: ERF, math.TanhOp: TANH, math.ExpOp: inline_exp}
"""Ops expanded inline (vector_math.py): exp always, erf and tanh on vectors."""


@dataclass
class MathToLLVM(RewritePattern):
    scalef: bool = False
    """Vector exp scales by 2^n with llvm.ldexp (one vscalefps on AVX-512)."""

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
        elif t is math.ExpOp:
            new, res = inline_exp(args[0], scalef=self.scalef and is_vector)
            replace(rewriter, op, new, [res])
            return
        elif is_vector and t in (math.ErfOp, math.TanhOp):
            new, res = _INLINE[t](args[0])
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

    cpu: str = ""
    """The CPU the code is for (a preset of passes/schedule/cpu_target.py; "" or "host": this
    one): decides whether vector exp uses vscalefps."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            scalef = cpu_target(self.cpu).has_scalef
        except ValueError as e:
            raise DiagnosticException(f"convert-math-to-llvm: {e}") from None
        rewrite_once(op, [MathToLLVM(scalef)])
