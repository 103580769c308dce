"""Inline expansions of exp (scalar and vector), erf and tanh (vector) for the LLVM CPU back end.

LLVM has no vector math library here: a `<16 x float>` call of `llvm.exp` (or libm's erff,
tanhf) becomes 16 scalar calls. These expansions stay in vector registers. exp is the Cephes
range reduction (x = n ln2 + r, |r| <= ln2/2, a degree-6 polynomial in r, 2^n built in the
exponent bits as two factors so that n may reach -150..128: results underflow to denormals and
zero and overflow to inf as expf's do; max relative error about 2e-7; NaN stays NaN). erf and tanh
are clamped odd rational approximations (Eigen's float kernels, max abs error about 4e-7).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue

from passes.conversions.llvm_common import const_float

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


def rational_odd(
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


Expansion = Callable[[SSAValue], tuple[list[Operation], SSAValue]]

ERF: Expansion = lambda x: rational_odd(x, 4.0, _ERF_P, _ERF_Q)  # noqa: E731
TANH: Expansion = lambda x: rational_odd(x, 7.90531110763549805, _TANH_P, _TANH_Q)  # noqa: E731

_EXP_P = (
    5.0000001201e-1,
    1.6666665459e-1,
    4.1665795894e-2,
    8.3334519073e-3,
    1.3981999507e-3,
    1.9875691500e-4,
)
"""Cephes expf: exp(r) ~ 1 + r + r^2 (P0 + P1 r + ... + P5 r^5) on |r| <= ln2/2."""
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_LOG2E = 1.44269504088896341
_EXP_MIN, _EXP_MAX = -104.0, 88.7228391116729996
"""exp is 0 in f32 below the first and inf above the second."""
_MAGIC = 8388608.0 + 127.0
"""2^23 + the exponent bias: k + _MAGIC holds k + 127 in its low mantissa bits."""


_ROUND_MAGIC = 12582912.0
"""1.5 * 2^23: for an integral |k| < 2^22, k + _ROUND_MAGIC holds k in its low mantissa bits, so
its bits minus _ROUND_MAGIC's are k as an i32 (the llvm dialect of xDSL has no fptosi)."""


def inline_exp(x: SSAValue, scalef: bool = False) -> tuple[list[Operation], SSAValue]:
    """exp(x) for an f32 scalar or vector x, without a call (so that LLVM's vectorizers can also
    widen the scalar form: it would otherwise vectorize unrolled expf calls into a vector call
    that codegen splits into scalar calls again).

    `scalef` (vectors on AVX-512 only): scale by 2^n with `llvm.ldexp`, which LLVM lowers to one
    vscalefps (denormal results rounded once, as below); on other targets it becomes a libm call
    per lane, so the default builds 2^n from exponent bits in two factors instead."""
    t: Attribute = x.type
    i32 = IntegerType(32)
    lanes = math.prod(t.get_shape()) if isinstance(t, VectorType) else 0
    ints: Attribute = VectorType(i32, t.get_shape()) if isinstance(t, VectorType) else i32
    ops: list[Operation] = []

    def emit(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    def c(v: float) -> SSAValue:
        return emit(const_float(v, t))

    def pow2(k: SSAValue) -> SSAValue:
        """2^k for integral k in [-126, 127]: the f32 bits (k + 127) << 23 (the shift drops the
        magic number's own exponent bits)."""
        biased = emit(llvm.BitcastOp(emit(llvm.FAddOp(k, c(_MAGIC))), ints))
        value: Attribute = IntegerAttr(23, 32)
        if isinstance(ints, VectorType):
            value = DenseIntOrFPElementsAttr.from_list(ints, [23] * lanes)
        shift = emit(llvm.ConstantOp(value, ints))
        return emit(llvm.BitcastOp(emit(llvm.ShlOp(biased, shift)), t))

    # llvm.maximum/minimum propagate NaN (maxnum would turn it into the bound)
    low = emit(llvm.CallIntrinsicOp("llvm.maximum", [x, c(_EXP_MIN)], [t]))
    xc = emit(llvm.CallIntrinsicOp("llvm.minimum", [low, c(_EXP_MAX)], [t]))
    n = emit(llvm.CallIntrinsicOp("llvm.roundeven", [emit(llvm.FMulOp(xc, c(_LOG2E)))], [t]))
    r = emit(llvm.FMAOp(n, c(-_LN2_HI), xc))
    r = emit(llvm.FMAOp(n, c(-_LN2_LO), r))
    acc = c(_EXP_P[-1])
    for k in reversed(_EXP_P[:-1]):
        acc = emit(llvm.FMAOp(acc, r, c(k)))
    r2 = emit(llvm.FMulOp(r, r))
    y = emit(llvm.FAddOp(emit(llvm.FMAOp(acc, r2, r)), c(1.0)))
    if scalef and lanes:
        magic_bits = int(np.float32(_ROUND_MAGIC).view(np.int32))
        bits = emit(llvm.BitcastOp(emit(llvm.FAddOp(n, c(_ROUND_MAGIC))), ints))
        int_vector = VectorType(i32, [lanes])
        magic = DenseIntOrFPElementsAttr.from_list(int_vector, [magic_bits] * lanes)
        bias = emit(llvm.ConstantOp(magic, int_vector))
        k = emit(llvm.SubOp(bits, bias))
        ldexp = f"llvm.ldexp.v{lanes}f32.v{lanes}i32"
        return ops, emit(llvm.CallIntrinsicOp(ldexp, [y, k], [t]))
    half = emit(llvm.FFloorOp(emit(llvm.FMulOp(n, c(0.5)))))
    rest = emit(llvm.FSubOp(n, half))
    return ops, emit(llvm.FMulOp(emit(llvm.FMulOp(y, pow2(half))), pow2(rest)))
