"""convert-linalg-to-loops (passes/conversions/linalg_to_loops/convert.py) checked numerically:
every schedule of a kernel computes the same result.

Kernels are written at the buffer level, lowered through convert-linalg-to-loops and the LLVM
conversions, run as machine code and compared with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.runtime import aligned_copy, aligned_empty
from tests.support.schedule_kernels import rows
from tests.support.scheduled_kernels import (
    bias_relu_src,
    conv_reference,
    conv_src,
    fused_src,
    matmul_src,
    random_schedules,
    rowmax_src,
    run_kernel,
)

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("schedule", [[]] + random_schedules(matmul_src(13, 21, 37), 6, seed=1))
def test_matmul_any_schedule(schedule: list[str]) -> None:
    a = RNG.standard_normal((13, 21)).astype(np.float32)
    b = RNG.standard_normal((21, 37)).astype(np.float32)
    got = run_kernel(matmul_src(13, 21, 37), ["default-schedule", *schedule], [a, b], (13, 37))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("schedule", [[]] + random_schedules(conv_src(5, 11, 24, 3, 1), 3, seed=2))
def test_conv_any_schedule(stride: int, schedule: list[str]) -> None:
    c, h, o, k = 5, 11, 24, 3
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, stride)
    got = run_kernel(
        conv_src(c, h, o, k, stride), ["default-schedule", *schedule], [x, w], ref.shape
    )
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("schedule", [[]] + random_schedules(bias_relu_src(7, 45), 4, seed=3))
def test_broadcast_elementwise_any_schedule(schedule: list[str]) -> None:
    x = RNG.standard_normal((7, 45)).astype(np.float32)
    b = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(bias_relu_src(7, 45), ["default-schedule", *schedule], [x, b], (7, 45))
    np.testing.assert_allclose(got, np.maximum(x + b, 0), rtol=1e-6)


@pytest.mark.parametrize("schedule", [[]] + random_schedules(rowmax_src(9, 33), 4, seed=4))
def test_row_reduction_any_schedule(schedule: list[str]) -> None:
    x = RNG.standard_normal((9, 33)).astype(np.float32)
    got = run_kernel(rowmax_src(9, 33), ["default-schedule", *schedule], [x], (9,))
    np.testing.assert_array_equal(got, x.max(axis=1))


@pytest.mark.parametrize(
    ("passes", "message"),
    [
        (["tile{sizes=4,4}"], "tile: expected 3 tile sizes (one per loop), got 2"),
        (["interchange{order=0,0,1}"], "not a permutation"),
        (
            ["vectorize{dim=1 width=16}", "unroll-jam{factors=1,8,1}"],
            "not a multiple of the vector width 16",
        ),
        (["tile{sizes=4,4,4 kernel=nope}"], "no kernel named 'nope'"),
    ],
)
def test_bad_schedules_are_reported(passes: list[str], message: str) -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(8, 8, 8)).parse_module()
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_passes(ctx, module, passes)


def test_a_reduction_whose_partials_cannot_combine_is_not_vectorized() -> None:
    """out = x - out has no combiner: vector partials along the reduction would be wrong."""
    src = rows(4, 32, "%s = arith.subf %a, %acc : f32")
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    with pytest.raises(CompileError, match="reduction loop 1 cannot be vectorized: the body"):
        run_passes(ctx, module, ["vectorize{dim=1}"])


@pytest.mark.parametrize(
    ("n", "m", "width", "unroll"),
    [(5, 37, 16, 32), (3, 64, 16, 64), (4, 7, 8, 8), (2, 100, 4, 12)],
)
@pytest.mark.parametrize(
    ("body", "reference"),
    [
        ("%s = arith.addf %acc, %a : f32", lambda x: x.sum(axis=1)),
        ("%s = arith.maximumf %acc, %a : f32", lambda x: x.max(axis=1)),
        ("%m = arith.mulf %a, %a : f32\n    %s = arith.addf %acc, %m : f32", None),
    ],
)
def test_vector_partials_along_a_reduction(
    n: int, m: int, width: int, unroll: int, body: str, reference: object
) -> None:
    """Vector lanes along the row: full blocks of `unroll / width` partials, then whole vectors
    into the first partial, the last `m % width` steps scalar; extents that leave each kind."""
    x = RNG.standard_normal((n, m)).astype(np.float32) - 3.0  # all-negative rows test max's -inf
    want = reference(x) if callable(reference) else (x * x).sum(axis=1)
    init = np.full(n, 0.5, np.float32)  # the initial value is folded in once
    if "maximumf" in body:
        want = np.maximum(want, init)
    else:
        want = want + init
    passes = [f"vectorize{{dim=1 width={width}}}", f"unroll-jam{{factors=2,{unroll}}}"]
    src = rows(n, m, body).replace("@rows", "@kernel")
    got = run_kernel(src, passes, [x], (n,), init=init)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_select_on_scalar_condition_in_vector_code() -> None:
    """A select whose condition depends on a non-vector loop stays a scalar-condition select."""
    src = """
func.func @kernel(%x: memref<8x32xf32>, %y: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x32xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f32
    %first = arith.cmpi eq, %i, %c0 : index
    %r = arith.select %first, %z, %in : f32
    linalg.yield %r : f32
  }
  func.return
}"""
    x = RNG.standard_normal((8, 32)).astype(np.float32)
    got = run_kernel(src, ["default-schedule{width=16}"], [x], (8, 32))
    ref = x.copy()
    ref[0] = 0
    np.testing.assert_array_equal(got, ref)


def test_compare_of_lane_values_stays_scalar() -> None:
    """cmpf on vector values is not expressible in xDSL 0.74: such kernels are scheduled scalar."""
    src = """
func.func @kernel(%x: memref<5x40xf32>, %y: memref<5x40xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<5x40xf32>) outs(%y : memref<5x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %neg = arith.cmpf olt, %in, %z : f32
    %r = arith.select %neg, %z, %in : f32
    linalg.yield %r : f32
  }
  func.return
}"""
    x = RNG.standard_normal((5, 40)).astype(np.float32)
    got = run_kernel(src, ["default-schedule{width=16}"], [x], (5, 40))
    np.testing.assert_array_equal(got, np.maximum(x, 0))


@pytest.mark.parametrize("k_tile", [0, 4, 5, 16])
@pytest.mark.parametrize("private", ["3", ""])
def test_fused_prologue_and_epilogue(k_tile: int, private: str) -> None:
    """The initializer runs in registers, the epilogue on the finished accumulator; with reduction
    cache tiles the partial sums go through the output buffer between the first and last tile."""
    m, k, n = 6, 17, 40
    src = fused_src(m, k, n, private)
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(
        ctx,
        module,
        [
            "default-schedule{width=16}",
            f"tile{{sizes=0,0,{k_tile} op=1}}",
            "convert-linalg-to-loops",
        ],
    )
    text = str(module)
    assert text.count("vector.fma") > 0
    loops_of_kernel = text.count("scf.for")
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    res = RNG.standard_normal((m, n)).astype(np.float32)
    module = Parser(make_context(), src).parse_module()
    ctx = make_context()
    run_passes(
        ctx,
        module,
        [
            "default-schedule{width=16}",
            f"tile{{sizes=0,0,{k_tile} op=1}}",
            "convert-linalg-to-loops",
            *LEVELS["llvm-dialect"],
        ],
    )
    t = aligned_empty((m, n))
    y = aligned_empty((m, n))
    compile_module(module).function("kernel")(
        *[aligned_copy(x) for x in (a, b, bias)], t, aligned_copy(res), y
    )
    ref = np.maximum(a @ b + bias + res, 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    if not private:  # T escapes the kernel: the epilogue stays a loop nest of its own, T is exact
        np.testing.assert_allclose(t, a @ b + bias, rtol=1e-4, atol=1e-5)
    assert loops_of_kernel > 0
