"""convert-arith-to-llvm (passes/conversions/convert_arith_to_llvm.py): arith ops on scalars and
1-D vectors -> llvm ops, `index` -> i64.

Alone, the pass converts the arith ops only and bridges `index` values to the rest with
unrealized casts. Through the whole LLVM lowering, integer arithmetic keeps arith's semantics
(signed division and remainder truncate toward zero, arithmetic shifts, fptosi truncates) and
maximumf propagates NaN, as numpy does.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy, aligned_empty
from passes.conversions.convert_arith_to_llvm import ConvertArithToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

SCALAR = """
func.func @scalar(%a: index, %x: f32, %y: f32, %n: i32) -> f32 {
  %c = arith.constant 3 : index
  %s = arith.addi %a, %c : index
  %i = arith.index_cast %s : index to i64
  %f = arith.sitofp %i : i64 to f32
  %m = arith.maximumf %x, %f : f32
  %cmp = arith.cmpf ogt, %m, %y : f32
  %sel = arith.select %cmp, %m, %y : f32
  %q = arith.divsi %n, %n : i32
  %mf = arith.sitofp %q : i32 to f32
  %out = arith.addf %sel, %mf : f32
  func.return %out : f32
}
"""

VECTOR = """
func.func @vector(%a: vector<16xf32>) -> vector<16xf32> {
  %z = arith.constant dense<0.5> : vector<16xf32>
  %r = arith.mulf %a, %z fastmath<contract> : vector<16xf32>
  func.return %r : vector<16xf32>
}
"""

# row 0..3 from b = 7 * i - 200 (i32): b / 3, b % 3, b >> 2, |b|; row 4: fptosi(4 x);
# row 5: maximumf(x, 0)
INTEGERS = """
func.func @integers(%x: memref<64xf32>, %o: memref<6x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r0 = arith.constant 0 : index
  %r1 = arith.constant 1 : index
  %r2 = arith.constant 2 : index
  %r3 = arith.constant 3 : index
  %r4 = arith.constant 4 : index
  %r5 = arith.constant 5 : index
  %seven = arith.constant 7 : i32
  %k200 = arith.constant 200 : i32
  %three = arith.constant 3 : i32
  %two = arith.constant 2 : i32
  %zero = arith.constant 0 : i32
  %four = arith.constant 4.0 : f32
  %fzero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %m = arith.muli %ii, %seven : i32
    %b = arith.subi %m, %k200 : i32
    %q = arith.divsi %b, %three : i32
    %qf = arith.sitofp %q : i32 to f32
    memref.store %qf, %o[%r0, %i] : memref<6x64xf32>
    %r = arith.remsi %b, %three : i32
    %rf = arith.sitofp %r : i32 to f32
    memref.store %rf, %o[%r1, %i] : memref<6x64xf32>
    %s = arith.shrsi %b, %two : i32
    %sf = arith.sitofp %s : i32 to f32
    memref.store %sf, %o[%r2, %i] : memref<6x64xf32>
    %neg = arith.cmpi slt, %b, %zero : i32
    %nb = arith.subi %zero, %b : i32
    %abs = arith.select %neg, %nb, %b : i32
    %af = arith.sitofp %abs : i32 to f32
    memref.store %af, %o[%r3, %i] : memref<6x64xf32>
    %v = memref.load %x[%i] : memref<64xf32>
    %v4 = arith.mulf %v, %four : f32
    %t = arith.fptosi %v4 : f32 to i32
    %tf = arith.sitofp %t : i32 to f32
    memref.store %tf, %o[%r4, %i] : memref<6x64xf32>
    %mx = arith.maximumf %v, %fzero : f32
    memref.store %mx, %o[%r5, %i] : memref<6x64xf32>
  }
  func.return
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-arith-to-llvm") is ConvertArithToLLVMPass


def test_arith_ops_become_llvm_ops() -> None:
    module = apply(ConvertArithToLLVMPass(), SCALAR)
    assert converted_ops(module) == [
        "llvm.mlir.constant",
        "llvm.add",
        "llvm.sitofp",  # index_cast index -> i64 is no op at all: index is i64
        "llvm.call_intrinsic",  # llvm.maximum: NaN-propagating, as arith.maximumf
        "llvm.fcmp",
        "llvm.select",
        "llvm.sdiv",
        "llvm.sitofp",
        "llvm.fadd",
        "func.return",
    ]
    (const,) = [op for op in module.walk() if isinstance(op, llvm.ConstantOp)]
    assert str(const.result.type) == "i64" and const.value.value.data == 3
    (cmp,) = [op for op in module.walk() if isinstance(op, llvm.FCmpOp)]
    assert cmp.predicate.value.data == 2  # ogt
    (maximum,) = [op for op in module.walk() if isinstance(op, llvm.CallIntrinsicOp)]
    assert maximum.intrin.data == "llvm.maximum"


def test_vector_constants_and_fastmath_flags_carry_over() -> None:
    module = apply(ConvertArithToLLVMPass(), VECTOR)
    assert converted_ops(module) == ["llvm.mlir.constant", "llvm.fmul", "func.return"]
    (mul,) = [op for op in module.walk() if isinstance(op, llvm.FMulOp)]
    assert [str(t) for t in mul.result_types] == ["vector<16xf32>"]
    assert "contract" in str(mul.fastmathFlags)
    (const,) = [op for op in module.walk() if isinstance(op, llvm.ConstantOp)]
    assert "dense<5.000000e-01> : vector<16xf32>" in str(const)


def test_integer_semantics_match_numpy() -> None:
    program = compile_module(lower(INTEGERS))
    x = RNG.uniform(-3.0, 3.0, 64).astype(np.float32)
    x[:3] = [-0.3, 0.3, -2.6]  # fptosi truncates toward zero: 4x = -1.2 -> -1, 1.2 -> 1
    o = aligned_empty((6, 64))
    program.function("integers")(aligned_copy(x), o)
    b = np.arange(64, dtype=np.int64) * 7 - 200
    np.testing.assert_array_equal(o[0], np.trunc(b / 3))  # not floor division
    np.testing.assert_array_equal(o[1], np.fmod(b, 3))  # the sign of the dividend
    np.testing.assert_array_equal(o[2], b >> 2)  # arithmetic shift: floor
    np.testing.assert_array_equal(o[3], np.abs(b))
    np.testing.assert_array_equal(o[4], np.trunc(x * 4))
    np.testing.assert_array_equal(o[5], np.maximum(x, 0))


def test_maximumf_propagates_nan() -> None:
    program = compile_module(lower(INTEGERS))
    x = RNG.uniform(-1.0, 1.0, 64).astype(np.float32)
    x[5] = np.nan
    o = aligned_empty((6, 64))
    program.function("integers")(aligned_copy(x), o)
    assert np.isnan(o[5, 5]) and not np.isnan(o[5, 4])
    assert np.isnan(o[5]).sum() == 1
