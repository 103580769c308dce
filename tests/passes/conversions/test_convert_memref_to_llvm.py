"""convert-memref-to-llvm (passes/conversions/convert_memref_to_llvm.py): memrefs -> bare
pointers, their loads and stores -> address arithmetic from the memref type's strides and offset.

Alone, the pass converts the memref ops only (allocations become aligned_alloc / free calls,
views pointer offsets) and bridges to the rest with unrealized casts; through the whole LLVM
lowering, allocations, views, subviews and reshapes read and write the right elements.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import llvm

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy, aligned_empty
from passes.conversions.convert_memref_to_llvm import ConvertMemRefToLLVMPass
from tests.support.llvm_kernels import apply, converted_ops, lower

RNG = np.random.default_rng(0)

MEMREF = """
func.func @f(%m: memref<8x16xf32, strided<[32, 1], offset: 5>>, %i: index, %j: index) {
  %a = memref.load %m[%i, %j] : memref<8x16xf32, strided<[32, 1], offset: 5>>
  %arena = memref.alloc() {alignment = 64 : i64} : memref<100xi8>
  %c4 = arith.constant 4 : index
  %v = memref.view %arena[%c4][] : memref<100xi8> to memref<4xf32>
  memref.store %a, %v[%i] : memref<4xf32>
  memref.dealloc %arena : memref<100xi8>
  func.return
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-memref-to-llvm") is ConvertMemRefToLLVMPass


def test_memref_ops_become_address_arithmetic_and_runtime_calls() -> None:
    module = apply(ConvertMemRefToLLVMPass(), MEMREF)
    assert converted_ops(module) == [
        # m[i, j] at i * 32 + j + 5: the strides and offset of the type
        "llvm.mlir.constant",
        "llvm.mul",
        "llvm.add",
        "llvm.mlir.constant",
        "llvm.add",
        "llvm.getelementptr",
        "llvm.load",
        # alloc: aligned_alloc(64, 100 bytes rounded up to a multiple of the alignment)
        "llvm.mlir.constant",
        "llvm.mlir.constant",
        "llvm.call",
        "arith.constant",
        # view: a byte offset into the arena
        "llvm.getelementptr",
        "llvm.getelementptr",
        "llvm.store",
        "llvm.call",
        "func.return",
    ]
    constants = [
        op.value.value.data
        for op in module.walk()
        if isinstance(op, llvm.ConstantOp) and hasattr(op.value, "value")
    ]
    assert constants == [32, 5, 64, 128]
    calls = [op.callee.string_value() for op in module.walk() if isinstance(op, llvm.CallOp)]
    assert calls == ["aligned_alloc", "free"]
    decls = [op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)]
    assert decls == ["aligned_alloc", "free"]
    loads = [op for op in module.walk() if isinstance(op, llvm.LoadOp | llvm.StoreOp)]
    assert [op.alignment.value.data for op in loads if op.alignment] == [4, 4]


VIEWS = """
func.func @views(%x: memref<8x16xf32>, %y: memref<4x8xf32>, %z: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %arena = memref.alloc() {alignment = 64 : i64} : memref<1024xi8>
  %off = arith.constant 512 : index
  %buf = memref.view %arena[%off][] : memref<1024xi8> to memref<8x16xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = vector.load %x[%i, %c0] : memref<8x16xf32>, vector<16xf32>
    %two = arith.constant dense<2.0> : vector<16xf32>
    %w = arith.mulf %v, %two : vector<16xf32>
    vector.store %w, %buf[%i, %c0] : memref<8x16xf32>, vector<16xf32>
  }
  %sub = memref.subview %buf[2, 4] [4, 8] [1, 1] : memref<8x16xf32> to memref<4x8xf32, strided<[16, 1], offset: 36>>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %sub[%i, %j] : memref<4x8xf32, strided<[16, 1], offset: 36>>
      memref.store %a, %y[%i, %j] : memref<4x8xf32>
    }
  }
  %flat = memref.collapse_shape %buf [[0, 1]] : memref<8x16xf32> into memref<128xf32>
  %cube = memref.expand_shape %flat [[0, 1, 2]] output_shape [2, 4, 16] : memref<128xf32> into memref<2x4x16xf32>
  scf.for %i = %c0 to %c128 step %c1 {
    %a = memref.load %flat[%i] : memref<128xf32>
    memref.store %a, %z[%i] : memref<128xf32>
  }
  %c2 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %e = memref.load %cube[%c2, %c3, %c4] : memref<2x4x16xf32>
  memref.store %e, %z[%c0] : memref<128xf32>
  memref.dealloc %arena : memref<1024xi8>
  func.return
}
"""


def test_alloc_view_subview_reshapes() -> None:
    prog = compile_module(lower(VIEWS))
    x = aligned_copy(RNG.uniform(-1, 1, (8, 16)).astype(np.float32))
    y, z = aligned_empty((4, 8)), aligned_empty(128)
    prog.function("views")(x, y, z)
    buf = 2 * x
    np.testing.assert_array_equal(y, buf[2:6, 4:12])
    expected = buf.ravel().copy()
    expected[0] = buf.reshape(2, 4, 16)[1, 3, 4]
    np.testing.assert_array_equal(z, expected)


MAIN_ARENA = MEMREF.replace("func.func @f(", "func.func @main(")
"""The same body as @main: its arena alloc/dealloc pair is the memory plan's."""


def test_mains_arena_is_kept_in_a_slot_between_calls() -> None:
    module = apply(ConvertMemRefToLLVMPass(), MAIN_ARENA)

    def calls(fn: str) -> list[str]:
        body = next(
            op for op in module.walk() if getattr(op, "sym_name", None) and op.sym_name.data == fn
        )
        return [op.callee.root_reference.data for op in body.walk() if isinstance(op, llvm.CallOp)]

    # @main takes the arena from slot 0 and gives it back; an empty slot allocates, a give
    # frees what the slot held
    assert calls("main") == ["__ziggurat_arena_take", "__ziggurat_arena_give"]
    assert calls("__ziggurat_arena_take") == ["aligned_alloc"]
    assert calls("__ziggurat_arena_give") == ["free"]
    assert calls("ziggurat_release_arenas") == ["free"]
    names = {op.sym_name.data for op in module.walk() if isinstance(op, llvm.GlobalOp)}
    assert names == {"__ziggurat_arena_0"}
    text = str(module)
    assert text.count("llvm.atomicrmw xchg") == 3  # take, give, release
    release = next(
        op
        for op in module.walk()
        if isinstance(op, llvm.FuncOp) and op.sym_name.data == "ziggurat_release_arenas"
    )
    assert release.linkage.linkage.data == "external"  # exported: the loader calls it


def test_other_functions_allocate_per_call() -> None:
    module = apply(ConvertMemRefToLLVMPass(), MEMREF)
    assert "__ziggurat_arena" not in str(module)
