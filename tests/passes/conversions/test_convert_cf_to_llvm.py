"""convert-cf-to-llvm (passes/conversions/convert_cf_to_llvm.py): cf branches -> llvm branches,
block arguments retyped (`index` -> i64).

Alone, the pass converts the branches only and bridges the retyped block arguments to their
users with casts. Through the whole LLVM lowering, a hand-written loop with a conditional exit
and a data-dependent branch computes what numpy does.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy
from passes.conversions.convert_cf_to_llvm import ConvertCfToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

LOOP = """
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  cf.br ^head(%c0 : index)
^head(%i: index):
  %p = arith.cmpi slt, %i, %n : index
  cf.cond_br %p, ^body, ^exit
^body:
  cf.br ^head(%i : index)
^exit:
  func.return
}
"""

# the sum of the positive elements among the first n, as a loop of blocks
SUM_POSITIVE = """
func.func @sum_positive(%x: memref<64xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  cf.br ^head(%c0, %zero : index, f32)
^head(%i: index, %acc: f32):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^body, ^exit(%acc : f32)
^body:
  %v = memref.load %x[%i] : memref<64xf32>
  %next = arith.addi %i, %c1 : index
  %pos = arith.cmpf ogt, %v, %zero : f32
  cf.cond_br %pos, ^add, ^head(%next, %acc : index, f32)
^add:
  %s = arith.addf %acc, %v : f32
  cf.br ^head(%next, %s : index, f32)
^exit(%r: f32):
  func.return %r : f32
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-cf-to-llvm") is ConvertCfToLLVMPass


def test_branches_become_llvm_branches_with_i64_block_arguments() -> None:
    module = apply(ConvertCfToLLVMPass(), LOOP)
    assert converted_ops(module) == [
        "arith.constant",
        "llvm.br",
        "arith.cmpi",
        "llvm.cond_br",
        "llvm.br",
        "func.return",
    ]
    (fn,) = module.ops
    head = fn.body.blocks[1]
    assert [str(arg.type) for arg in head.args] == ["i64"]
    branches = [op for op in module.walk() if isinstance(op, llvm.BrOp)]
    assert all(op.successor is head for op in branches)


def test_branchy_loop_matches_numpy() -> None:
    program = compile_module(lower(SUM_POSITIVE))
    x = aligned_copy(RNG.standard_normal(64).astype(np.float32))
    for n in (0, 1, 17, 64):
        got = program.function("sum_positive")(x, n)
        assert got == pytest.approx(float(x[:n][x[:n] > 0].sum()), abs=1e-5)
