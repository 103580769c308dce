"""convert-parallel-to-runtime (passes/conversions/convert_parallel_to_runtime.py): every
`scf.parallel` becomes one call into the thread-pool runtime.

The loop body is outlined into `@<fn>_parallel<k>(%begin, %end, %ctx)` over a range of the
collapsed iteration space; values from outside the loop travel through `ctx` slots (memrefs,
indices, scalars) or are rebuilt in the outlined body (constants, per-thread scratch allocas).
Checked on the IR, and numerically on 1, 2 and 3 threads.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func, llvm, scf
from xdsl.parser import Parser

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.model import make_context, run_passes
from compiler.registry import get_pass
from compiler.runtime import aligned_copy
from passes.conversions.convert_parallel_to_runtime import ConvertParallelToRuntimePass
from tests.support.llvm_kernels import apply, lower
from tests.support.scheduled_kernels import (
    conv_reference,
    conv_src,
    loops_ir,
    matmul_src,
    run_kernel,
)

RNG = np.random.default_rng(7)

# y[i, j] = s * x[i, j + off] over a 2-D scf.parallel of 6 x 4 iterations (i by 1, j by 2: the
# odd columns of y are not written); the memref arguments, the index and the f32 travel through
# ctx, the constant and the scratch alloca are rebuilt in the outlined body
SCALE = """
func.func @scale(%x: memref<6x10xf32>, %y: memref<6x8xf32>, %off: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %scratch = memref.alloca() : memref<2xf32>
  "scf.parallel"(%c0, %c0, %c6, %c8, %c1, %c2) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %jj = arith.addi %j, %off : index
    %v = memref.load %x[%i, %jj] : memref<6x10xf32>
    %m = arith.mulf %v, %s : f32
    memref.store %m, %scratch[%c0] : memref<2xf32>
    %r = memref.load %scratch[%c0] : memref<2xf32>
    memref.store %r, %y[%i, %j] : memref<6x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
"""


def test_registered_under_its_name() -> None:
    assert get_pass("convert-parallel-to-runtime") is ConvertParallelToRuntimePass


def test_parallel_loop_becomes_one_runtime_call_over_the_collapsed_space() -> None:
    module = apply(ConvertParallelToRuntimePass(), SCALE)
    assert not [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    scale, outlined = (op for op in module.ops if isinstance(op, func.FuncOp))
    assert outlined.sym_name.data == "scale_parallel0"
    assert [str(t) for t in outlined.function_type.inputs] == ["index", "index", "!llvm.ptr"]
    calls = [op for op in scale.walk() if isinstance(op, llvm.CallOp)]
    assert [c.callee.string_value() for c in calls] == ["zrt_parallel_for"]
    count = calls[0].args[2].owner
    assert isinstance(count, llvm.ConstantOp) and count.value.value.data == 6 * 4
    # x, y, off and s: four 8-byte ctx slots, stored in @scale and loaded in the body
    (slots,) = [op for op in scale.walk() if isinstance(op, llvm.AllocaOp)]
    assert slots.size.owner.value.value.data == 4
    assert len([op for op in scale.walk() if isinstance(op, llvm.StoreOp)]) == 4
    assert len([op for op in outlined.walk() if isinstance(op, llvm.LoadOp)]) == 4
    # the scratch buffer is per thread: allocated in the body, no longer in @scale
    assert [op.name for op in scale.walk() if op.name == "memref.alloca"] == []
    assert [op.name for op in outlined.walk() if op.name == "memref.alloca"] == ["memref.alloca"]
    decl = next(op for op in module.ops if isinstance(op, llvm.FuncOp))
    assert decl.sym_name.data == "zrt_parallel_for"


def test_runtime_call_computes_the_loop(threads: int) -> None:
    program = compile_module(lower(SCALE, first=[ConvertParallelToRuntimePass()]))
    assert program.parallel
    x = aligned_copy(RNG.standard_normal((6, 10)).astype(np.float32))
    y = aligned_copy(np.full((6, 8), -7.0, np.float32))
    program.function("scale")(x, y, 2, 1.5)
    expected = np.full((6, 8), -7.0, np.float32)
    expected[:, 0::2] = 1.5 * x[:, 2:10:2]
    np.testing.assert_array_equal(y, expected)


def test_outlined_body_and_runtime_call() -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(32, 16, 64)).parse_module()
    run_passes(
        ctx,
        module,
        [
            "default-schedule{width=8}",
            "tile{sizes=8,16,0}",
            "parallelize{loops=2}",
            "convert-linalg-to-loops",
            "convert-parallel-to-runtime",
        ],
        verify_each=True,
    )
    assert not [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    text = str(module)
    assert "func.func private @kernel_parallel0(" in text
    assert "llvm.call @zrt_parallel_for" in text
    assert "llvm.mlir.constant(16) : i64" in text  # 4 x 4 tiles in the collapsed space


def test_conv_parallel_with_gather_scratch(threads: int) -> None:
    """Vectorized along output channels: stores go through an alloca scratch, which must be
    private to each thread (rematerialized in the outlined body)."""
    c, h, o, k, s = 5, 11, 24, 3, 1
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, s)
    passes = [
        "default-schedule{width=8}",
        "vectorize{dim=1 width=8}",
        "unroll-jam{factors=1,8,1,3,1,1,3}",
        "tile{sizes=0,8,3,0,0,0,0}",
        "interchange{order=1,2,0,3,4,5,6}",
        "parallelize{loops=2}",
    ]
    text = loops_ir(conv_src(c, h, o, k, s), passes)
    assert "memref.alloca" in text and '"scf.parallel"' in text
    got = run_kernel(conv_src(c, h, o, k, s), passes, [x, w], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
