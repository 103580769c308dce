"""Parallel loops end to end: `parallelize` -> scf.parallel -> convert-parallel-to-runtime ->
calls into the pthread pool, checked against numpy on 1, 2 and 3 threads."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.parser import Parser

sys.path.insert(0, os.path.dirname(__file__))

from test_convert_linalg_to_loops import (  # noqa: E402
    bias_relu_src,
    conv_reference,
    conv_src,
    fused_src,
    loops_ir,
    matmul_src,
    rowmax_src,
    run_kernel,
)

from compiler import parallel_runtime  # noqa: E402
from compiler.model import make_context, run_passes  # noqa: E402

RNG = np.random.default_rng(7)


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    before = parallel_runtime.get_num_threads()
    parallel_runtime.set_num_threads(request.param)
    yield request.param
    parallel_runtime.set_num_threads(before)


def test_parallelize_makes_one_collapsed_scf_parallel() -> None:
    text = loops_ir(matmul_src(32, 16, 64), ["default-schedule{width=8}", "tile{sizes=8,16,0}", "parallelize{loops=2}"])
    assert text.count('"scf.parallel"') == 1
    assert "operandSegmentSizes = array<i32: 2, 2, 2, 0>" in text  # two loops collapsed


def test_remainder_tile_stops_the_collapse() -> None:
    # loop 0 has 8-row tiles of 30 rows (a peeled remainder): nothing is collapsed after it
    text = loops_ir(matmul_src(30, 16, 64), ["default-schedule{width=8}", "tile{sizes=8,16,0}", "parallelize{loops=2}"])
    assert '"scf.parallel"' not in text
    text = loops_ir(matmul_src(30, 16, 64), ["default-schedule{width=8}", "tile{sizes=8,16,0}", "interchange{order=1,0,2}", "parallelize{loops=2}"])
    assert "operandSegmentSizes = array<i32: 1, 1, 1, 0>" in text


def test_outlined_body_and_runtime_call() -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(32, 16, 64)).parse_module()
    run_passes(ctx, module, ["default-schedule{width=8}", "tile{sizes=8,16,0}", "parallelize{loops=2}", "convert-linalg-to-loops", "convert-parallel-to-runtime"], verify_each=True)
    assert not [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    text = str(module)
    assert "func.func private @kernel_parallel0(" in text
    assert "llvm.call @zrt_parallel_for" in text
    assert "llvm.mlir.constant(16) : i64" in text  # 4 x 4 tiles in the collapsed space


@pytest.mark.parametrize("tiles,loops", [("8,16,0", 1), ("8,16,0", 2), ("4,8,0", 2), ("0,16,0", 2)])
def test_matmul_parallel(threads: int, tiles: str, loops: int) -> None:
    a = RNG.standard_normal((32, 21)).astype(np.float32)
    b = RNG.standard_normal((21, 64)).astype(np.float32)
    got = run_kernel(matmul_src(32, 21, 64), ["default-schedule{width=8}", f"tile{{sizes={tiles}}}", f"parallelize{{loops={loops}}}"], [a, b], (32, 64))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-5)


def test_conv_parallel_with_gather_scratch(threads: int) -> None:
    """Vectorized along output channels: stores go through an alloca scratch, which must be
    private to each thread (rematerialized in the outlined body)."""
    c, h, o, k, s = 5, 11, 24, 3, 1
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, s)
    passes = ["default-schedule{width=8}", "vectorize{dim=1 width=8}", "unroll-jam{factors=1,8,1,3,1,1,3}", "tile{sizes=0,8,3,0,0,0,0}", "interchange{order=1,2,0,3,4,5,6}", "parallelize{loops=2}"]
    text = loops_ir(conv_src(c, h, o, k, s), passes)
    assert "memref.alloca" in text and '"scf.parallel"' in text
    got = run_kernel(conv_src(c, h, o, k, s), passes, [x, w], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_elementwise_and_reduction_parallel(threads: int) -> None:
    x = RNG.standard_normal((12, 45)).astype(np.float32)
    bias = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(bias_relu_src(12, 45), ["default-schedule", "tile{sizes=3,0}", "parallelize{loops=1}"], [x, bias], (12, 45))
    np.testing.assert_allclose(got, np.maximum(x + bias, 0), rtol=1e-6)
    got = run_kernel(rowmax_src(12, 33), ["default-schedule", "tile{sizes=4,0}", "parallelize{loops=1}"], [x[:, :33].copy()], (12,))
    np.testing.assert_array_equal(got, x[:, :33].max(axis=1))


def test_fused_kernel_parallel(threads: int) -> None:
    from compiler.backends.llvm_cpu import compile_module
    from compiler.model import LEVEL_PASSES
    from compiler.runtime import aligned_copy, aligned_empty

    m, k, n = 12, 17, 40
    ctx = make_context()
    module = Parser(ctx, fused_src(m, k, n, "3")).parse_module()
    run_passes(ctx, module, ["default-schedule{width=8}", "tile{sizes=4,0,0 op=1}", "parallelize{loops=1 op=1}", "convert-linalg-to-loops", *LEVEL_PASSES["llvm-dialect"]], verify_each=True)
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    bias, res = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal((m, n)).astype(np.float32)
    t, y = aligned_empty((m, n)), aligned_empty((m, n))
    program = compile_module(module)
    assert program.parallel
    program.function("kernel")(*[aligned_copy(v) for v in (a, b, bias)], t, aligned_copy(res), y)
    np.testing.assert_allclose(y, np.maximum(a @ b + bias + res, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "passes,message",
    [
        (["default-schedule", "parallelize{loops=3}"], "only the outermost parallel loops can run across threads"),
        (["default-schedule", "parallelize{loops=4}"], "option 'loops': 4 is out of range; allowed: 0..3"),
    ],
)
def test_bad_parallelize(passes: list[str], message: str) -> None:
    from compiler.errors import CompileError

    ctx = make_context()
    module = Parser(ctx, matmul_src(8, 8, 8)).parse_module()
    with pytest.raises(CompileError, match=message):
        run_passes(ctx, module, passes)
