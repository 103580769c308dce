"""convert-func-to-llvm (passes/conversions/convert_func_to_llvm.py): functions, calls and
returns -> llvm ones; memref arguments become bare pointers, `index` i64.

Alone, the pass converts the func ops only (a private function becomes an internal one) and
bridges the retyped arguments to their users with casts. Through the whole LLVM lowering, calls
pass pointers and scalars and return results; only public functions are callable from Python.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy
from passes.conversions.convert_func_to_llvm import ConvertFuncToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

CALL = """
func.func private @kernel(%a: memref<16xf32>, %s: f32) -> f32 {
  func.return %s : f32
}
func.func @main(%a: memref<16xf32>, %n: index) {
  %s = arith.constant 1.0 : f32
  %r = func.call @kernel(%a, %s) : (memref<16xf32>, f32) -> f32
  func.return
}
"""

# y = alpha * x + y over the first n elements, returning sum(y[:n]); @main calls it twice
CALLS = """
func.func private @axpy(%n: index, %alpha: f32, %x: memref<64xf32>, %y: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %a = memref.load %x[%i] : memref<64xf32>
    %b = memref.load %y[%i] : memref<64xf32>
    %m = arith.mulf %a, %alpha : f32
    %r = arith.addf %m, %b : f32
    memref.store %r, %y[%i] : memref<64xf32>
    %next = arith.addf %acc, %r : f32
    scf.yield %next : f32
  }
  func.return %s : f32
}
func.func @main(%x: memref<64xf32>, %y: memref<64xf32>, %n: index) -> f32 {
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %first = func.call @axpy(%n, %two, %x, %y) : (index, f32, memref<64xf32>, memref<64xf32>) -> f32
  %second = func.call @axpy(%n, %half, %x, %y) : (index, f32, memref<64xf32>, memref<64xf32>) -> f32
  %both = arith.addf %first, %second : f32
  func.return %both : f32
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-func-to-llvm") is ConvertFuncToLLVMPass


def test_functions_calls_and_returns_become_llvm_ones() -> None:
    module = apply(ConvertFuncToLLVMPass(), CALL)
    kernel, main = module.ops
    assert isinstance(kernel, llvm.FuncOp) and isinstance(main, llvm.FuncOp)
    assert kernel.linkage.linkage.data == "internal"  # it was private
    assert main.linkage.linkage.data == "external"
    assert [str(t) for t in kernel.function_type.inputs] == ["!llvm.ptr", "f32"]
    assert str(kernel.function_type.output) == "f32"
    assert [str(t) for t in main.function_type.inputs] == ["!llvm.ptr", "i64"]
    assert converted_ops(module) == ["llvm.return", "arith.constant", "llvm.call", "llvm.return"]
    (call,) = [op for op in module.walk() if isinstance(op, llvm.CallOp)]
    assert call.callee.string_value() == "kernel"
    assert [str(t) for t in call.args.types] == ["!llvm.ptr", "f32"]


def test_calls_pass_pointers_and_scalars_and_return_results() -> None:
    program = compile_module(lower(CALLS))
    assert set(program.signatures) == {"main"}  # @axpy is internal
    x = aligned_copy(RNG.standard_normal(64).astype(np.float32))
    y0 = RNG.standard_normal(64).astype(np.float32)
    y = aligned_copy(y0)
    got = program.function("main")(x, y, 40)
    first = 2 * x[:40] + y0[:40]
    second = 0.5 * x[:40] + first
    np.testing.assert_allclose(y[:40], second, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(y[40:], y0[40:])
    assert got == pytest.approx(float(first.sum() + second.sum()), abs=1e-4)
