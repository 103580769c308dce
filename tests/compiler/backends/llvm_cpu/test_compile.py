"""End-to-end: hand-written LOOP-level MLIR -> LLVM conversions -> llvmlite JIT -> numpy check."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from compiler.backends.llvm_cpu.compile import compile_module, compile_to_asm, compile_to_llvm_ir
from compiler.backends.llvm_cpu.translate import INLINE_CONSTANT_LIMIT
from compiler.runtime import aligned_copy, aligned_empty, is_aligned, time_call
from tests.support.llvm_kernels import lower, matmul_mlir

RNG = np.random.default_rng(0)


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return aligned_copy(RNG.uniform(lo, hi, size=shape).astype(np.float32))


ADD = """
func.func @add(%a: memref<1000xf32>, %b: memref<1000xf32>, %c: memref<1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c992 = arith.constant 992 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c992 step %c16 {
    %x = vector.load %a[%i] : memref<1000xf32>, vector<16xf32>
    %y = vector.load %b[%i] : memref<1000xf32>, vector<16xf32>
    %z = arith.addf %x, %y : vector<16xf32>
    vector.store %z, %c[%i] : memref<1000xf32>, vector<16xf32>
  }
  scf.for %i = %c992 to %c1000 step %c1 {
    %x = memref.load %a[%i] : memref<1000xf32>
    %y = memref.load %b[%i] : memref<1000xf32>
    %z = arith.addf %x, %y : f32
    memref.store %z, %c[%i] : memref<1000xf32>
  }
  func.return
}
"""


def test_elementwise_add_vector_and_remainder() -> None:
    prog = compile_module(lower(ADD))
    a, b, c = rand(1000), rand(1000), aligned_empty(1000)
    prog.function("add")(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert "zmm" in prog.asm or "ymm" in prog.asm
    assert set(prog.timings) >= {"translate_s", "optimize_s", "jit_s"}


def test_unaligned_numpy_views_are_fine() -> None:
    """Loads carry alignment 4, so 4-byte-aligned (not 64) buffers must work too."""
    prog = compile_module(lower(ADD))
    raw = rand(1003)
    a = raw[1:1001]
    assert not is_aligned(a)
    b, c = rand(1000), aligned_empty(1000)
    prog.function("add")(a, b, c)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (32, 64, 16)])
def test_matmul_iter_args_vector_accumulators(m: int, n: int, k: int) -> None:
    prog = compile_module(lower(matmul_mlir(m, n, k)))
    a, b, c = rand(m, k), rand(k, n), aligned_empty((m, n))
    prog.function("matmul")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    asm = prog.asm
    assert "vfmadd" in asm and ("zmm" in asm or "ymm" in asm)


def _global_mlir(values: np.ndarray) -> str:
    n = values.size
    rows = values.reshape(-1, 4)
    data = ", ".join("[" + ", ".join(f"{v:.8e}" for v in row) + "]" for row in rows)
    # xDSL 0.74 has no custom syntax for memref.global: generic form (mlir-opt accepts it too)
    return f"""
"memref.global"() <{{sym_name = "w", sym_visibility = "private", type = memref<{n // 4}x4xf32>, initial_value = dense<[{data}]> : tensor<{n // 4}x4xf32>, constant}}> : () -> ()
func.func @scale(%x: memref<{n // 4}x4xf32>, %y: memref<{n // 4}x4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %cn = arith.constant {n // 4} : index
  %w = memref.get_global @w : memref<{n // 4}x4xf32>
  scf.for %i = %c0 to %cn step %c1 {{
    scf.for %j = %c0 to %c4 step %c1 {{
      %a = memref.load %x[%i, %j] : memref<{n // 4}x4xf32>
      %b = memref.load %w[%i, %j] : memref<{n // 4}x4xf32>
      %c = arith.mulf %a, %b : f32
      memref.store %c, %y[%i, %j] : memref<{n // 4}x4xf32>
    }}
  }}
  func.return
}}
"""


@pytest.mark.parametrize("n", [16, 4096])
def test_global_constant_small_inline_large_bound(n: int) -> None:
    w = RNG.uniform(-1, 1, n).astype(np.float32)
    prog = compile_module(lower(_global_mlir(w)))
    x, y = rand(n // 4, 4), aligned_empty((n // 4, 4))
    prog.function("scale")(x, y)
    np.testing.assert_allclose(y, x * w.reshape(-1, 4), rtol=1e-6)
    if n * 4 >= INLINE_CONSTANT_LIMIT:
        assert prog.bound_constants, "large constants must be bound, not emitted as IR"
        assert "external" in prog.llvm_ir and len(prog.llvm_ir) < 20000
    else:
        assert not prog.bound_constants


CALLS = """
func.func private @kernel(%a: memref<16xf32>, %s: f32, %o: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %a[%c0] : memref<16xf32>, vector<16xf32>
  %b = vector.broadcast %s : f32 to vector<16xf32>
  %w = arith.mulf %v, %b : vector<16xf32>
  vector.store %w, %o[%c0] : memref<16xf32>, vector<16xf32>
  func.return
}
func.func private @total(%a: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = vector.load %a[%c0] : memref<16xf32>, vector<16xf32>
  %acc = arith.constant 0.5 : f32
  %r = vector.reduction <add>, %v, %acc : vector<16xf32> into f32
  func.return %r : f32
}
func.func @main(%a: memref<16xf32>, %o: memref<16xf32>, %stats: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %three = arith.constant 3.0 : f32
  func.call @kernel(%a, %three, %o) : (memref<16xf32>, f32, memref<16xf32>) -> ()
  %t = func.call @total(%o) : (memref<16xf32>) -> f32
  memref.store %t, %stats[%c0] : memref<4xf32>
  %v = vector.load %o[%c0] : memref<16xf32>, vector<16xf32>
  %mx = vector.reduction <maximumf>, %v : vector<16xf32> into f32
  memref.store %mx, %stats[%c1] : memref<4xf32>
  %mn = vector.reduction <minimumf>, %v : vector<16xf32> into f32
  memref.store %mn, %stats[%c2] : memref<4xf32>
  %e = vector.extract %v[5] : f32 from vector<16xf32>
  %z = arith.constant dense<0.0> : vector<16xf32>
  %ins = vector.insert %e, %z [3] : f32 into vector<16xf32>
  %sh = vector.shuffle %ins, %ins [3, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<16xf32>, vector<16xf32>
  %first = vector.extract %sh[0] : f32 from vector<16xf32>
  memref.store %first, %stats[%c3] : memref<4xf32>
  func.return
}
"""


def test_func_call_and_vector_reductions() -> None:
    module = lower(CALLS)
    prog = compile_module(module)
    assert set(prog.signatures) == {"main"}  # private functions are internal
    a, o, stats = rand(16), aligned_empty(16), aligned_empty(4)
    prog.function("main")(a, o, stats)
    np.testing.assert_allclose(o, 3 * a, rtol=1e-6)
    np.testing.assert_allclose(stats, [o.sum() + 0.5, o.max(), o.min(), o[5]], rtol=1e-5, atol=1e-6)
    assert "reduce.fadd" not in prog.llvm_ir or "reassoc" in prog.llvm_ir


def test_scalar_arguments_and_raw_pointers() -> None:
    text = """
func.func @axpy(%n: index, %alpha: f32, %x: memref<64xf32>, %y: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %a = memref.load %x[%i] : memref<64xf32>
    %b = memref.load %y[%i] : memref<64xf32>
    %m = arith.mulf %a, %alpha : f32
    %r = arith.addf %m, %b : f32
    memref.store %r, %y[%i] : memref<64xf32>
    %cmp = arith.cmpf ogt, %r, %zero : f32
    %inc = arith.select %cmp, %r, %zero : f32
    %next = arith.addf %acc, %inc : f32
    scf.yield %next : f32
  }
  func.return %s : f32
}
"""
    prog = compile_module(lower(text))
    x, y = rand(64), rand(64)
    ref = 2.0 * x + y
    got = prog.function("axpy")(64, 2.0, x.ctypes.data, ctypes.c_void_p(y.ctypes.data))
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    assert got == pytest.approx(float(np.maximum(ref, 0).sum()), rel=1e-5)


def test_ir_and_asm_helpers() -> None:
    module = lower(ADD)
    ir_text = compile_to_llvm_ir(module)
    assert "define void @add(ptr" in ir_text and "<16 x float>" in ir_text
    assert "zmm" in compile_to_asm(lower(ADD)) or "ymm" in compile_to_asm(lower(ADD))


def test_time_call_is_positive() -> None:
    prog = compile_module(lower(ADD))
    a, b, c = rand(1000), rand(1000), aligned_empty(1000)
    f = prog.function("add")
    assert 0 < time_call(lambda: f(a, b, c), repeat=3, number=10) < 0.1
