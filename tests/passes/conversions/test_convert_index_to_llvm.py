"""convert-index-to-llvm (passes/conversions/convert_index_to_llvm.py): the `index` type -> i64
wherever it survives in llvm ops.

xDSL has no `index` dialect: what the pass owns is the type. Alone, it retypes llvm ops written
with `index` (an `llvm.mlir.constant(8 : index) : index`) and bridges to their index users with
casts; in the whole LLVM lowering such constants then take part in i64 arithmetic that computes
the right numbers (without the pass the backend would see `index`).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IndexType

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_empty
from passes.conversions.convert_index_to_llvm import ConvertIndexToLLVMPass
from tests.support.llvm_kernels import apply, apply_all, converted_ops, lower, lowering_passes

RETYPE = """
func.func @f(%a: i64) -> i64 {
  %c = llvm.mlir.constant(8 : index) : index
  %u = llvm.mlir.undef : index
  %i = builtin.unrealized_conversion_cast %c : index to i64
  %j = builtin.unrealized_conversion_cast %u : index to i64
  %r = llvm.add %i, %j : i64
  func.return %r : i64
}
"""

# y[i] = 3 i + 1, the 3 and the 1 written as index-typed llvm constants
IOTA = """
func.func @iota(%y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %three = llvm.mlir.constant(3 : index) : index
  %one = llvm.mlir.constant(1 : index) : index
  scf.for %i = %c0 to %c16 step %c1 {
    %t = arith.muli %i, %three : index
    %u = arith.addi %t, %one : index
    %v = arith.index_cast %u : index to i64
    %f = arith.sitofp %v : i64 to f32
    memref.store %f, %y[%i] : memref<16xf32>
  }
  func.return
}
"""


def _index_typed(op: llvm.ConstantOp | llvm.UndefOp) -> bool:
    return any(isinstance(t, IndexType) for t in op.result_types)


def test_registered_under_its_name() -> None:
    assert get_pass("convert-index-to-llvm") is ConvertIndexToLLVMPass


def test_index_typed_llvm_ops_become_i64() -> None:
    module = apply(ConvertIndexToLLVMPass(), RETYPE)
    assert converted_ops(module) == [
        "llvm.mlir.constant",
        "llvm.mlir.undef",
        "llvm.add",
        "func.return",
    ]
    const, undef = [op for op in module.walk() if isinstance(op, llvm.ConstantOp | llvm.UndefOp)]
    assert [str(t) for t in (*const.result_types, *undef.result_types)] == ["i64", "i64"]
    assert str(const.value) == "8 : i64"  # the value is retyped too


def test_the_llvm_level_needs_it_and_then_computes_with_index_constants() -> None:
    others = [p for p in lowering_passes() if not isinstance(p, ConvertIndexToLLVMPass)]
    assert len(others) == len(lowering_passes()) - 1
    with pytest.warns(UserWarning, match="Unable to remove cast"):
        without = apply_all(others, IOTA)
    left = [op for op in without.walk() if isinstance(op, llvm.ConstantOp) and _index_typed(op)]
    assert len(left) == 2  # the two hand-written constants: the backend cannot take them
    program = compile_module(lower(IOTA))
    y = aligned_empty(16)
    program.function("iota")(y)
    np.testing.assert_array_equal(y, 3 * np.arange(16) + 1)
