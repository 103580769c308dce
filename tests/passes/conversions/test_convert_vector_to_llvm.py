"""convert-vector-to-llvm (passes/conversions/convert_vector_to_llvm.py): vector ops on 1-D
vectors -> llvm ops.

Alone, the pass converts the vector ops only and bridges to the rest with unrealized casts;
loads and stores carry an alignment; through the whole LLVM lowering the vector code computes
what numpy does (broadcast, fma, reductions with and without an accumulator, extract, insert,
shuffle).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy, aligned_empty
from passes.conversions.convert_vector_to_llvm import ConvertVectorToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

VECTOR = """
func.func @f(%m: memref<64xf32>, %i: index, %s: f32) -> f32 {
  %v = vector.load %m[%i] : memref<64xf32>, vector<16xf32>
  %b = vector.broadcast %s : f32 to vector<16xf32>
  %f = vector.fma %v, %b, %v : vector<16xf32>
  vector.store %f, %m[%i] : memref<64xf32>, vector<16xf32>
  %r = vector.reduction <add>, %f : vector<16xf32> into f32
  %e = vector.extract %f[3] : f32 from vector<16xf32>
  %x = arith.addf %r, %e : f32
  func.return %x : f32
}
"""

ADD = """
func.func @add(%a: memref<1000xf32>, %b: memref<1000xf32>, %c: memref<1000xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c992 = arith.constant 992 : index
  scf.for %i = %c0 to %c992 step %c16 {
    %x = vector.load %a[%i] : memref<1000xf32>, vector<16xf32>
    %y = vector.load %b[%i] : memref<1000xf32>, vector<16xf32>
    %z = arith.addf %x, %y : vector<16xf32>
    vector.store %z, %c[%i] : memref<1000xf32>, vector<16xf32>
  }
  func.return
}
"""

# o = a * s + b in two vectors of 16; stats: sum(o[:16]) + 0.5, max(o[16:]), min(o[16:]),
# o[5], and o[5] moved to lane 0 by an insert (into zeros, lane 3) and a shuffle
VECTORS = """
func.func @vectors(%a: memref<32xf32>, %b: memref<32xf32>, %s: f32, %o: memref<32xf32>, %stats: memref<5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %bs = vector.broadcast %s : f32 to vector<16xf32>
  scf.for %i = %c0 to %c32 step %c16 {
    %x = vector.load %a[%i] : memref<32xf32>, vector<16xf32>
    %y = vector.load %b[%i] : memref<32xf32>, vector<16xf32>
    %z = vector.fma %x, %bs, %y : vector<16xf32>
    vector.store %z, %o[%i] : memref<32xf32>, vector<16xf32>
  }
  %lo = vector.load %o[%c0] : memref<32xf32>, vector<16xf32>
  %hi = vector.load %o[%c16] : memref<32xf32>, vector<16xf32>
  %half = arith.constant 0.5 : f32
  %sum = vector.reduction <add>, %lo, %half : vector<16xf32> into f32
  memref.store %sum, %stats[%c0] : memref<5xf32>
  %mx = vector.reduction <maximumf>, %hi : vector<16xf32> into f32
  memref.store %mx, %stats[%c1] : memref<5xf32>
  %mn = vector.reduction <minimumf>, %hi : vector<16xf32> into f32
  memref.store %mn, %stats[%c2] : memref<5xf32>
  %e = vector.extract %lo[5] : f32 from vector<16xf32>
  memref.store %e, %stats[%c3] : memref<5xf32>
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %ins = vector.insert %e, %zero [3] : f32 into vector<16xf32>
  %sh = vector.shuffle %ins, %ins [3, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<16xf32>, vector<16xf32>
  %first = vector.extract %sh[0] : f32 from vector<16xf32>
  memref.store %first, %stats[%c4] : memref<5xf32>
  func.return
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-vector-to-llvm") is ConvertVectorToLLVMPass


def test_vector_ops_become_llvm_ops_and_nothing_else_changes() -> None:
    module = apply(ConvertVectorToLLVMPass(), VECTOR)
    assert converted_ops(module) == [
        # vector.load: the element address, then one load of the whole vector
        "llvm.getelementptr",
        "llvm.load",
        # vector.broadcast: insert into lane 0, shuffle it to every lane
        "llvm.mlir.undef",
        "llvm.mlir.constant",
        "llvm.insertelement",
        "llvm.shufflevector",
        "llvm.intr.fma",
        "llvm.getelementptr",
        "llvm.store",
        # vector.reduction <add> without accumulator: from 0.0, reassociable
        "llvm.mlir.constant",
        "llvm.intr.vector.reduce.fadd",
        "llvm.mlir.constant",
        "llvm.extractelement",
        "arith.addf",
        "func.return",
    ]
    (shuffle,) = [op for op in module.walk() if isinstance(op, llvm.ShuffleVectorOp)]
    assert list(shuffle.mask.get_values()) == [0] * 16


def test_vector_loads_and_stores_carry_alignment() -> None:
    module = apply(ConvertVectorToLLVMPass(), ADD)
    accesses = [op for op in module.walk() if isinstance(op, llvm.LoadOp | llvm.StoreOp)]
    assert len(accesses) == 3
    assert all(op.alignment is not None and op.alignment.value.data == 4 for op in accesses)


def test_vector_code_matches_numpy() -> None:
    program = compile_module(lower(VECTORS))
    a, b = (aligned_copy(RNG.standard_normal(32).astype(np.float32)) for _ in range(2))
    o, stats = aligned_empty(32), aligned_empty(5)
    program.function("vectors")(a, b, 3.0, o, stats)
    np.testing.assert_allclose(o, a * 3 + b, rtol=1e-6, atol=1e-6)
    expected = [o[:16].sum() + 0.5, o[16:].max(), o[16:].min(), o[5], o[5]]
    np.testing.assert_allclose(stats, expected, rtol=1e-5, atol=1e-6)
