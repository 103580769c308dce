"""resolve-dynamic-memrefs (passes/transforms/resolve_dynamic_memrefs.py): memrefs with `?` dims
lower to bare pointers plus size arguments, compiled once and run at any size.

Each kernel here is compiled once through the whole LLVM lowering (llvmlite) and run at several
sizes against numpy; the exact IR is in lit_tests/passes/transforms/resolve-dynamic-memrefs.mlir.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import DiagnosticException

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.registry import get_pass
from compiler.runtime import aligned_copy, aligned_empty
from passes.transforms.resolve_dynamic_memrefs import ResolveDynamicMemrefsPass
from tests.support.llvm_kernels import apply, lower, matmul_mlir, parse

RNG = np.random.default_rng(0)


def _compile(text: str):  # type: ignore[no-untyped-def]
    return compile_module(lower(text, [ResolveDynamicMemrefsPass()]))


def _rand(*shape: int) -> np.ndarray:
    return aligned_copy(RNG.uniform(-1, 1, shape).astype(np.float32))


def test_registered_under_its_name() -> None:
    assert get_pass("resolve-dynamic-memrefs") is ResolveDynamicMemrefsPass


ADD = """
func.func @add(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf32>
  %n = memref.dim %a, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %x = memref.load %a[%i, %j] : memref<?x?xf32>
      %y = memref.load %b[%i, %j] : memref<?x?xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i, %j] : memref<?x?xf32>
    }
  }
  func.return
}
"""


def test_one_compile_runs_every_size() -> None:
    add = _compile(ADD).function("add")
    for shape in [(1, 1), (7, 5), (64, 300), (3, 0)]:
        a, b, c = _rand(*shape), _rand(*shape), aligned_empty(shape)
        add(a, b, c, *shape, *shape, *shape)  # each memref's sizes, in argument order
        np.testing.assert_array_equal(c, a + b)


VIEWS = """
func.func @views(%x: memref<?x?xf32>, %out: memref<?x?xf32>, %r0: index, %c0_: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %out, %c0 : memref<?x?xf32>
  %n = memref.dim %out, %c1 : memref<?x?xf32>
  %sub = memref.subview %x[%r0, %c0_] [%m, %n] [1, 2] : memref<?x?xf32> to memref<?x?xf32, strided<[?, 2], offset: ?>>
  %tmp = memref.alloc(%m, %n) : memref<?x?xf32>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %sub[%i, %j] : memref<?x?xf32, strided<[?, 2], offset: ?>>
      %w = arith.addf %v, %v : f32
      memref.store %w, %tmp[%i, %j] : memref<?x?xf32>
    }
  }
  %flat = memref.collapse_shape %tmp [[0, 1]] : memref<?x?xf32> into memref<?xf32>
  %outflat = memref.collapse_shape %out [[0, 1]] : memref<?x?xf32> into memref<?xf32>
  %total = memref.dim %flat, %c0 : memref<?xf32>
  scf.for %k = %c0 to %total step %c1 {
    %v = memref.load %flat[%k] : memref<?xf32>
    memref.store %v, %outflat[%k] : memref<?xf32>
  }
  memref.dealloc %tmp : memref<?x?xf32>
  func.return
}
"""


@pytest.mark.parametrize(
    ("rows", "cols", "m", "n", "r0", "c0"),
    [(5, 9, 2, 3, 1, 2), (40, 70, 17, 30, 20, 5), (1, 1, 1, 1, 0, 0), (4, 4, 0, 2, 0, 0)],
)
def test_subview_at_run_time_offsets_alloc_and_collapse(
    rows: int, cols: int, m: int, n: int, r0: int, c0: int
) -> None:
    views = _compile(VIEWS).function("views")
    x, out = _rand(rows, cols), aligned_empty((m, n))
    views(x, out, r0, c0, rows, cols, m, n)
    np.testing.assert_array_equal(out, 2 * x[r0 : r0 + m, c0 : c0 + 2 * n : 2])


SCALE = """
func.func @scale(%x: memref<?x?xf32>, %y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  %twos = arith.constant dense<2.0> : vector<8xf32>
  %m = memref.dim %x, %c0 : memref<?x?xf32>
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  %tail = arith.remui %n, %c8 : index
  %main = arith.subi %n, %tail : index
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %main step %c8 {
      %v = vector.load %x[%i, %j] : memref<?x?xf32>, vector<8xf32>
      %w = arith.mulf %v, %twos : vector<8xf32>
      vector.store %w, %y[%i, %j] : memref<?x?xf32>, vector<8xf32>
    }
    scf.for %j = %main to %n step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i, %j] : memref<?x?xf32>
    }
  }
  func.return
}
"""


def test_vector_main_loop_and_remainder_over_a_run_time_row() -> None:
    scale = _compile(SCALE).function("scale")
    for shape in [(1, 3), (3, 8), (5, 29), (2, 64)]:
        x, y = _rand(*shape), aligned_empty(shape)
        scale(x, y, *shape, *shape)
        np.testing.assert_array_equal(y, 2 * x)


COPY = (
    '    "memref.copy"(%xk, %tmp) : (memref<?x16xf32, strided<[16, 1], offset: ?>>, '
    "memref<?x16xf32>) -> ()\n"
)
CALLS = """
func.func private @row_sums(%x: memref<?x16xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %m = memref.dim %x, %c0 : memref<?x16xf32>
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %m step %c1 {
    %t = scf.for %j = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<?x16xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    memref.store %t, %s[%i] : memref<?xf32>
  }
  func.return
}
func.func @batched(%x: memref<?x?x16xf32>, %s: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %b = memref.dim %x, %c0 : memref<?x?x16xf32>
  %n = memref.dim %x, %c1 : memref<?x?x16xf32>
  scf.for %k = %c0 to %b step %c1 {
    %xk = memref.subview %x[%k, 0, 0] [1, %n, 16] [1, 1, 1] : memref<?x?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    %tmp = memref.alloc(%n) : memref<?x16xf32>
    "memref.copy"(%xk, %tmp) : (memref<?x16xf32, strided<[16, 1], offset: ?>>, memref<?x16xf32>) -> ()
    %sums = memref.alloc(%n) : memref<?xf32>
    func.call @row_sums(%tmp, %sums) : (memref<?x16xf32>, memref<?xf32>) -> ()
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %sums[%i] : memref<?xf32>
      memref.store %v, %s[%k, %i] : memref<?x?xf32>
    }
    memref.dealloc %sums : memref<?xf32>
    memref.dealloc %tmp : memref<?x16xf32>
  }
  func.return
}
"""


def test_calls_pass_the_sizes_of_what_they_pass() -> None:
    # memref.copy of a run-time view is not resolved (only loads, stores, views, calls and
    # dims are): the error names it. Without the copy, the call gets the alloc's size.
    with pytest.raises(DiagnosticException, match="memref.copy uses a memref with run-time"):
        apply(ResolveDynamicMemrefsPass(), CALLS)
    text = CALLS.replace(
        COPY,
        """    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %v = memref.load %xk[%i, %j] : memref<?x16xf32, strided<[16, 1], offset: ?>>
        memref.store %v, %tmp[%i, %j] : memref<?x16xf32>
      }
    }
""",
    )
    batched = _compile(text).function("batched")
    for shape in [(1, 1), (3, 7), (2, 33)]:
        x, s = _rand(*shape, 16), aligned_empty(shape)
        batched(x, s, *shape, *shape)
        np.testing.assert_allclose(s, x.sum(axis=2), rtol=1e-5, atol=1e-5)


EXPAND = """
func.func @heads(%x: memref<?x64xf32>, %y: memref<?x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %half = arith.divui %n, %c4 : index
  %flat = memref.collapse_shape %x [[0, 1]] : memref<?x64xf32> into memref<?xf32>
  %rows = arith.muli %n, %c4 : index
  %split = memref.expand_shape %flat [[0, 1, 2]] output_shape [%rows, 2, 8] : memref<?xf32> into memref<?x2x8xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %h = %c0 to %c4 step %c1 {
      scf.for %d = %c0 to %c16 step %c1 {
        %r = arith.muli %i, %c4 : index
        %row = arith.addi %r, %h : index
        %p = arith.divui %d, %c16 : index
        %c8 = arith.constant 8 : index
        %q0 = arith.divui %d, %c8 : index
        %q1 = arith.remui %d, %c8 : index
        %v = memref.load %split[%row, %q0, %q1] : memref<?x2x8xf32>
        memref.store %v, %y[%i, %h, %d] : memref<?x4x16xf32>
      }
    }
  }
  func.return
}
"""


def test_expand_shape_with_run_time_output_shape() -> None:
    heads = _compile(EXPAND).function("heads")
    for n in [1, 5, 12]:
        x, y = _rand(n, 64), aligned_empty((n, 4, 16))
        heads(x, y, n, n)
        np.testing.assert_array_equal(y, x.reshape(n, 4, 16))


RANK_REDUCING = """
func.func @plane(%x: memref<?x?x?xf32>, %y: memref<?x?xf32>, %b: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %x, %c1 : memref<?x?x?xf32>
  %n = memref.dim %x, %c0 : memref<?x?x?xf32>
  %k = arith.constant 2 : index
  %p = memref.dim %x, %k : memref<?x?x?xf32>
  %s = memref.subview %x[%b, 0, 0] [1, %m, %p] [1, 1, 1] : memref<?x?x?xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %p step %c1 {
      %v = memref.load %s[%i, %j] : memref<?x?xf32, strided<[?, 1], offset: ?>>
      memref.store %v, %y[%i, %j] : memref<?x?xf32>
    }
  }
  func.return
}
"""


def test_rank_reducing_subview() -> None:
    plane = _compile(RANK_REDUCING).function("plane")
    x = _rand(3, 5, 7)
    for b in range(3):
        y = aligned_empty((5, 7))
        plane(x, y, b, 3, 5, 7, 5, 7)
        np.testing.assert_array_equal(y, x[b])


def test_register_blocked_matmul_is_left_as_it_is() -> None:
    """Static shapes: nothing to resolve, the module is unchanged."""
    text = matmul_mlir(m=8, n=32, k=8, mr=4, nr=32, vw=16)
    assert str(apply(ResolveDynamicMemrefsPass(), text)) == str(parse(text))


def test_a_memref_from_an_unknown_op_is_a_located_error() -> None:
    text = """
func.func @pick(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: i1, %i: index) -> f32 {
  %m = arith.select %c, %a, %b : memref<?x?xf32>
  %v = memref.load %m[%i, %i] : memref<?x?xf32>
  func.return %v : f32
}
"""
    with pytest.raises(
        DiagnosticException, match="no run-time layout for a memref made by arith.select"
    ):
        apply(ResolveDynamicMemrefsPass(), text)


def test_an_argument_with_run_time_strides_is_refused() -> None:
    text = """
func.func @strided(%a: memref<4x4xf32, strided<[?, 1]>>, %i: index) -> f32 {
  %v = memref.load %a[%i, %i] : memref<4x4xf32, strided<[?, 1]>>
  func.return %v : f32
}
"""
    with pytest.raises(DiagnosticException, match="run-time strides nothing gives"):
        apply(ResolveDynamicMemrefsPass(), text)


def test_the_llvm_lowering_refuses_an_unresolved_view() -> None:
    with pytest.raises(DiagnosticException, match="needs resolve-dynamic-memrefs first"):
        lower(VIEWS)
