"""Kernels with run-time extents (passes/conversions/linalg_to_loops/dynamic_blocks.py): a
linalg.generic on memrefs with `?` dims is lowered once, as static blocks of 64, 32, ... 1 along
each run-time loop, and computes the right result at every size.

Each kernel is lowered through default-schedule, convert-linalg-to-loops and the whole LLVM level
once, then run at sizes that exercise every block (0, 1, 7, 64, 65, 127, 300) against numpy.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.runtime import aligned_copy, aligned_empty

RNG = np.random.default_rng(0)
SIZES = [0, 1, 7, 64, 65, 127, 300]
MLIR_OPT = Path("/usr/bin/mlir-opt-22")


def _loops(src: str) -> str:
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, ["default-schedule", "convert-linalg-to-loops"], verify_each=True)
    return str(module)


def _compiled(src: str):  # type: ignore[no-untyped-def]
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    passes = ["default-schedule", "convert-linalg-to-loops", *LEVELS["llvm-dialect"]]
    run_passes(ctx, module, passes, verify_each=True)
    return compile_module(module).function("kernel")


def _rand(*shape: int) -> np.ndarray:
    return aligned_copy(RNG.uniform(-1, 1, shape).astype(np.float32))


MATMUL = """
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @kernel(%x: memref<?x48xf32>, %w: memref<48x32xf32>, %y: memref<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x48xf32>, memref<48x32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_matmul_with_run_time_rows() -> None:
    kernel = _compiled(MATMUL)
    w = _rand(48, 32)
    for n in SIZES:
        x, y = _rand(n, 48), aligned_empty((n, 32))
        kernel(x, w, y, n, n)  # the sizes of x's and y's `?` dims follow the buffers
        np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)


COLUMN_SUMS = """
#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @kernel(%x: memref<?x16xf32>, %s: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x16xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  }
  func.return
}
"""


def test_reduction_over_a_run_time_extent_accumulates_block_after_block() -> None:
    kernel = _compiled(COLUMN_SUMS)
    for n in SIZES:
        x, s = _rand(n, 16), aligned_empty(16)
        kernel(x, s, n)
        np.testing.assert_allclose(s, x.sum(axis=0), rtol=1e-5, atol=1e-5)


GELU_ROWS = """
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
func.func @kernel(%x: memref<1x?x40xf32>, %b: memref<40xf32>, %y: memref<1x?x40xf32>) {
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<1x?x40xf32>, memref<40xf32>) outs(%y : memref<1x?x40xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %t = arith.addf %v, %c : f32
    %e = math.tanh %t : f32
    linalg.yield %e : f32
  }
  func.return
}
"""


def test_elementwise_over_batch_one_and_a_run_time_sequence() -> None:
    """[1, seq, hidden]: the unit batch dim's stride is seq * hidden, unknown and never used."""
    kernel = _compiled(GELU_ROWS)
    b = _rand(40)
    for n in SIZES:
        x, y = _rand(1, n, 40), aligned_empty((1, n, 40))
        kernel(x, b, y, n, n)
        np.testing.assert_allclose(y, np.tanh(x + b), rtol=1e-5, atol=1e-6)


EVEN_COLUMNS = """
#in = affine_map<(d0, d1) -> (d0, d1 * 2)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel(%x: memref<?x32xf32>, %y: memref<?x16xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x32xf32>) outs(%y : memref<?x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = arith.addf %v, %v : f32
    linalg.yield %t : f32
  }
  func.return
}
"""


def test_strided_reads_of_a_block_start_at_the_block() -> None:
    """Lanes two elements apart are read through a flat view of the operand: for a block at a
    run-time offset the view starts at that offset (extract_strided_metadata)."""
    assert "memref.extract_strided_metadata" in _loops(EVEN_COLUMNS)
    kernel = _compiled(EVEN_COLUMNS)
    for n in SIZES:
        x, y = _rand(n, 32), aligned_empty((n, 16))
        kernel(x, y, n, n)
        np.testing.assert_array_equal(y, 2 * x[:, ::2])


def test_the_blocks_are_64_then_each_binary_digit_of_the_remainder() -> None:
    text = _loops(MATMUL)
    # one loop of full blocks and one block per digit of the remainder, for the fill and the
    # product each
    for rows in (64, 32, 16, 8, 4, 2, 1):
        assert (
            text.count(f"memref<?x32xf32> to memref<{rows}x32xf32, strided<[32, 1], offset: ?>>")
            == 2
        )


@pytest.mark.skipif(not MLIR_OPT.is_file(), reason="/usr/bin/mlir-opt-22 not installed")
def test_mlir_opt_accepts_the_loops() -> None:
    r = subprocess.run(
        [str(MLIR_OPT), "--verify-each"], input=_loops(MATMUL), capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr


ROWS_OF_RUN_TIME_LENGTH = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kernel(%x: memref<?x?xf32>, %s: memref<?xf32>, %y: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<?x?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %t = arith.mulf %v, %c : f32
    linalg.yield %t : f32
  }
  func.return
}
"""


def test_rows_of_run_time_length_run_one_row_per_block() -> None:
    """`?x?`: the row stride is the run-time row length, so each block is one row (a unit dim
    whose stride no access uses) and blocks of 64, 32, ... 1 along it."""
    text = _loops(ROWS_OF_RUN_TIME_LENGTH)
    assert "memref<?x?xf32> to memref<1x64xf32, strided<[?, 1], offset: ?>>" in text
    assert "to memref<64x" not in text
    kernel = _compiled(ROWS_OF_RUN_TIME_LENGTH)
    for m, n in [(1, 1), (3, 7), (5, 64), (2, 300), (0, 4), (4, 0)]:
        x, s, y = _rand(m, n), _rand(m), aligned_empty((m, n))
        kernel(x, s, y, m, n, m, m, n)
        np.testing.assert_allclose(y, x * s[:, None], rtol=1e-6)


def test_a_run_time_dim_indexed_by_several_loops_is_refused() -> None:
    src = """
#in = affine_map<(d0, d1) -> (d0 + d1)>
#w = affine_map<(d0, d1) -> (d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @kernel(%x: memref<?xf32>, %w: memref<3xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<?xf32>, memref<3xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %m = arith.mulf %v, %c : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  }
  func.return
}
"""
    with pytest.raises(
        CompileError,
        match="operand #0 has a run-time dim 0 indexed by an expression of several loops",
    ):
        _loops(src)
