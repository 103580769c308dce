"""convert-math-to-llvm (passes/conversions/convert_math_to_llvm.py): math ops -> LLVM
intrinsics, libm calls, or inline approximations.

Alone, the pass converts the math ops only: log / pow / sqrt become intrinsics, exp inline code, a scalar tanh a
call to libm's tanhf (declared once), a vector erf an inline rational approximation. Through the
whole LLVM lowering every function of the math dialect we emit matches numpy, on scalars and on
vectors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy, aligned_empty
from passes.conversions.convert_math_to_llvm import ConvertMathToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

FUNCTIONS = """
func.func @f(%x: f32, %v: vector<16xf32>) -> (f32, vector<16xf32>) {
  %e = math.log %x : f32
  %p = math.powf %e, %x : f32
  %t = math.tanh %p : f32
  %t2 = math.tanh %t : f32
  %s = math.sqrt %v : vector<16xf32>
  %r = math.erf %s : vector<16xf32>
  func.return %t2, %r : f32, vector<16xf32>
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-math-to-llvm") is ConvertMathToLLVMPass


def test_math_ops_become_intrinsics_libm_calls_and_approximations() -> None:
    module = apply(ConvertMathToLLVMPass(), FUNCTIONS)
    ops = converted_ops(module)
    assert ops[:5] == [
        "llvm.intr.log",
        "llvm.intr.pow",
        "llvm.call",
        "llvm.call",
        "llvm.intr.sqrt",
    ]
    # erf on a vector: clamp to [-4, 4], x * p(x^2) / q(x^2) with p and q by fma (6 + 4), one divide
    erf = ops[5:-1]
    assert erf[:4] == [
        "llvm.mlir.constant",
        "llvm.intr.maxnum",
        "llvm.mlir.constant",
        "llvm.intr.minnum",
    ]
    assert erf.count("llvm.intr.fma") == 10 and erf.count("llvm.fdiv") == 1
    assert erf[-1] == "llvm.fdiv" and ops[-1] == "func.return"
    assert not [name for name in ops if name.startswith("math.")]
    calls = [op.callee.string_value() for op in module.walk() if isinstance(op, llvm.CallOp)]
    assert calls == ["tanhf", "tanhf"]
    decls = [op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)]
    assert decls == ["tanhf"]  # declared once


MATH = """
func.func @math(%x: memref<64xf32>, %p: memref<64xf32>, %o: memref<12x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %r0 = arith.constant 0 : index
  %r1 = arith.constant 1 : index
  %r2 = arith.constant 2 : index
  %r3 = arith.constant 3 : index
  %r4 = arith.constant 4 : index
  %r5 = arith.constant 5 : index
  %r6 = arith.constant 6 : index
  %r7 = arith.constant 7 : index
  %r8 = arith.constant 8 : index
  %r9 = arith.constant 9 : index
  %r10 = arith.constant 10 : index
  %r11 = arith.constant 11 : index
  scf.for %i = %c0 to %c64 step %c16 {
    %v = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
    %w = vector.load %p[%i] : memref<64xf32>, vector<16xf32>
    %e = math.exp %v : vector<16xf32>
    vector.store %e, %o[%r0, %i] : memref<12x64xf32>, vector<16xf32>
    %a = math.absf %v : vector<16xf32>
    %l = math.log %a : vector<16xf32>
    vector.store %l, %o[%r1, %i] : memref<12x64xf32>, vector<16xf32>
    %t = math.tanh %v : vector<16xf32>
    vector.store %t, %o[%r2, %i] : memref<12x64xf32>, vector<16xf32>
    %f = math.erf %v : vector<16xf32>
    vector.store %f, %o[%r3, %i] : memref<12x64xf32>, vector<16xf32>
    %s = math.sqrt %a : vector<16xf32>
    vector.store %s, %o[%r4, %i] : memref<12x64xf32>, vector<16xf32>
    %q = math.powf %a, %w : vector<16xf32>
    vector.store %q, %o[%r5, %i] : memref<12x64xf32>, vector<16xf32>
    %z = arith.constant dense<0.0> : vector<16xf32>
    %m = arith.maximumf %v, %z : vector<16xf32>
    vector.store %m, %o[%r6, %i] : memref<12x64xf32>, vector<16xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    %w = memref.load %p[%i] : memref<64xf32>
    %e = math.exp %v : f32
    memref.store %e, %o[%r7, %i] : memref<12x64xf32>
    %t = math.tanh %v : f32
    memref.store %t, %o[%r8, %i] : memref<12x64xf32>
    %f = math.erf %v : f32
    memref.store %f, %o[%r9, %i] : memref<12x64xf32>
    %a = math.absf %v : f32
    %q = math.powf %a, %w : f32
    memref.store %q, %o[%r10, %i] : memref<12x64xf32>
    %r = math.rsqrt %a : f32
    %l = math.log %r : f32
    memref.store %l, %o[%r11, %i] : memref<12x64xf32>
  }
  func.return
}
"""


def _erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x.ravel()]).reshape(x.shape)


def test_math_scalars_and_vectors_match_numpy() -> None:
    prog = compile_module(lower(MATH))
    x = RNG.uniform(-5.0, 5.0, 64).astype(np.float32)
    x[:4] = [0.0, 1e-3, -1e-3, 9.5]
    p = aligned_copy(RNG.uniform(-2.0, 2.0, 64).astype(np.float32))
    o = aligned_empty((12, 64))
    prog.function("math")(aligned_copy(x), p, o)
    a = np.abs(x).astype(np.float64)
    with np.errstate(divide="ignore"):
        expected = {
            0: np.exp(x),
            1: np.log(a),
            2: np.tanh(x),
            3: _erf(x),
            4: np.sqrt(a),
            5: np.power(a, p),
            6: np.maximum(x, 0),
            7: np.exp(x),
            8: np.tanh(x),
            9: _erf(x),
            10: np.power(a, p),
            11: np.log(1 / np.sqrt(a)),
        }
    for row, ref in expected.items():
        np.testing.assert_allclose(o[row], ref, rtol=1e-4, atol=1e-5, err_msg=f"row {row}")


VECTOR_EXP = """
func.func @vexp(%x: memref<256xf32>, %o: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c16 {
    %v = vector.load %x[%i] : memref<256xf32>, vector<16xf32>
    %e = math.exp %v : vector<16xf32>
    vector.store %e, %o[%i] : memref<256xf32>, vector<16xf32>
  }
  func.return
}
func.func @sexp(%x: memref<256xf32>, %o: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %e = math.exp %v : f32
    memref.store %e, %o[%i] : memref<256xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize("cpu", ["znver4", "x86-64-v3"])
@pytest.mark.parametrize("function", ["vexp", "sexp"])
def test_exp_is_inline_and_matches_expf_over_the_whole_range(function: str, cpu: str) -> None:
    """Both ways of scaling by 2^n: vscalefps through llvm.ldexp (AVX-512: znver4's vectors)
    and exponent bits in two factors (AVX2, and scalars). Either compiles on any x86 host."""
    converted = apply(ConvertMathToLLVMPass(cpu=cpu), VECTOR_EXP)
    ops = converted_ops(converted)
    assert "llvm.intr.exp" not in ops and "llvm.call" not in ops  # no 16 scalar expf calls
    intrinsics = [o.intrin.data for o in converted.walk() if isinstance(o, llvm.CallIntrinsicOp)]
    ldexps = [name for name in intrinsics if name.startswith("llvm.ldexp")]
    assert ldexps == (["llvm.ldexp.v16f32.v16i32"] if cpu == "znver4" else [])  # vexp's only
    prog = compile_module(lower(VECTOR_EXP, first=[ConvertMathToLLVMPass(cpu=cpu)]))
    special = [0.0, -0.0, 1.0, -1.0, 88.0, 88.72, 88.8, 1e4, -87.0, -87.4, -100.0, -103.0, -104.5]
    special += [-1e4, np.inf, -np.inf, np.nan, 1e-30]
    x = np.concatenate([special, RNG.uniform(-110.0, 90.0, 256 - len(special))]).astype(np.float32)
    o = aligned_empty((256,))
    prog.function(function)(aligned_copy(x), o)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    assert np.isnan(o[np.isnan(x)]).all()
    finite = np.isfinite(ref32) & (ref32 > np.finfo(np.float32).tiny)
    rel = np.abs(o[finite] - ref[finite]) / ref[finite]
    assert rel.max() < 3e-7, rel.max()  # about 2 ulp in the normal range
    assert (o[np.isinf(ref32)] == np.inf).all()  # overflow is inf, as expf's
    small = ~np.isnan(x) & (ref32 <= np.finfo(np.float32).tiny)  # denormals and zeros
    np.testing.assert_allclose(o[small], ref[small], rtol=0, atol=2e-44)
