"""Scheduled loop generation checked numerically: every schedule of a kernel computes the same result.

Kernels are written at the buffer level, lowered through convert-linalg-to-loops and the LLVM
conversions, run as machine code and compared with numpy.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

from compiler.backends.llvm_cpu import compile_module
from compiler.errors import CompileError
from compiler.model import LEVEL_PASSES, make_context, run_passes
from compiler.runtime import aligned_copy, aligned_empty
from passes.analysis.kernel_access import analyze_kernel

BODY_MAC = """
  ^bb0(%in0: f32, %in1: f32, %acc0: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.addf %acc0, %p : f32
    linalg.yield %s : f32
"""


def matmul_src(m: int, k: int, n: int) -> str:
    return f"""
func.func @kernel(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %c: memref<{m}x{n}xf32>) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<{m}x{n}xf32>)
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : memref<{m}x{k}xf32>, memref<{k}x{n}xf32>) outs(%c : memref<{m}x{n}xf32>) {{{BODY_MAC}  }}
  func.return
}}"""


def conv_src(c: int, h: int, o: int, k: int, s: int) -> str:
    oh = (h - k) // s + 1
    return f"""
func.func @kernel(%x: memref<1x{c}x{h}x{h}xf32>, %w: memref<{c}x{k}x{k}x{o}xf32>, %y: memref<1x{o}x{oh}x{oh}xf32>) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<1x{o}x{oh}x{oh}xf32>)
  linalg.generic {{indexing_maps = [affine_map<(n, o, h, w, c, kh, kw) -> (n, c, h * {s} + kh, w * {s} + kw)>, affine_map<(n, o, h, w, c, kh, kw) -> (c, kh, kw, o)>, affine_map<(n, o, h, w, c, kh, kw) -> (n, o, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}} ins(%x, %w : memref<1x{c}x{h}x{h}xf32>, memref<{c}x{k}x{k}x{o}xf32>) outs(%y : memref<1x{o}x{oh}x{oh}xf32>) {{{BODY_MAC}  }}
  func.return
}}"""


def bias_relu_src(n: int, c: int) -> str:
    """Broadcast add of a per-column bias, then relu: an elementwise kernel with a broadcast operand."""
    return f"""
func.func @kernel(%x: memref<{n}x{c}xf32>, %b: memref<{c}xf32>, %y: memref<{n}x{c}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}} ins(%x, %b : memref<{n}x{c}xf32>, memref<{c}xf32>) outs(%y : memref<{n}x{c}xf32>) {{
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }}
  func.return
}}"""


def rowmax_src(n: int, c: int) -> str:
    return f"""
func.func @kernel(%x: memref<{n}x{c}xf32>, %y: memref<{n}xf32>) {{
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%y : memref<{n}xf32>)
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}} ins(%x : memref<{n}x{c}xf32>) outs(%y : memref<{n}xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }}
  func.return
}}"""


def conv_reference(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """numpy conv of conv_src's layout: x (1, C, H, H), w (C, K, K, O), no padding."""
    _, _, h, _ = x.shape
    k, o = w.shape[1], w.shape[3]
    oh = (h - k) // stride + 1
    ref = np.zeros((1, o, oh, oh), np.float32)
    for kh in range(k):
        for kw in range(k):
            patch = x[0, :, kh : kh + stride * oh : stride, kw : kw + stride * oh : stride]
            ref[0] += np.einsum("chw,co->ohw", patch, w[:, kh, kw, :])
    return ref


def loops_ir(src: str, passes: list[str]) -> str:
    """The loops-level text of src after the schedule passes and convert-linalg-to-loops."""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, [*passes, "convert-linalg-to-loops"], verify_each=True)
    return str(module)


def run_kernel(src: str, schedule_passes: list[str], args: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, [*schedule_passes, "convert-linalg-to-loops", *LEVEL_PASSES["llvm-dialect"]], verify_each=True)
    out = aligned_empty(out_shape)
    compile_module(module).function("kernel")(*[aligned_copy(a) for a in args], out)
    return out


def random_schedules(src: str, count: int, seed: int) -> list[list[str]]:
    """Random but valid schedule pass lists for the kernel in src (tiles, orders, unrolls, vector loop)."""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    info = analyze_kernel(next(op for op in module.walk() if isinstance(op, GenericOp)))
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = info.num_loops
        order = list(range(n))
        rng.shuffle(order)
        tiles = [rng.choice([0, 0, 2, 3, 5, 8]) for _ in range(n)]
        width = rng.choice([4, 8, 16])
        vec_candidates = [d for d in info.parallel_loops if info.extents[d] > 1]
        vec = rng.choice([*vec_candidates, -1])
        unroll = []
        for d in range(n):
            if d == vec:
                unroll.append(width * rng.choice([1, 2]))
            else:
                unroll.append(rng.choice([1, 2, 3]))
        passes = [
            f"tile{{sizes={','.join(map(str, tiles))}}}",
            f"interchange{{order={','.join(map(str, order))}}}",
            f"vectorize{{dim={vec} width={width}}}",
            f"unroll-jam{{factors={','.join(map(str, unroll))}}}",
        ]
        out.append(passes)
    return out


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
    got = run_kernel(conv_src(c, h, o, k, stride), ["default-schedule", *schedule], [x, w], ref.shape)
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


def test_default_schedule_vectorizes_matmul_with_register_tile() -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(64, 64, 64)).parse_module()
    run_passes(ctx, module, ["default-schedule", "convert-linalg-to-loops"])
    text = str(module)
    assert "vector.fma" in text and "iter_args" in text
    # the B row is loaded once per k step and reused by every row of the register tile
    assert text.count("vector.load %b") == 2


@pytest.mark.parametrize(
    ("passes", "message"),
    [
        (["tile{sizes=4,4}"], "tile: expected 3 tile sizes (one per loop), got 2"),
        (["interchange{order=0,0,1}"], "not a permutation"),
        (["vectorize{dim=2}"], "loop 2 cannot be vectorized"),
        (["vectorize{dim=1 width=16}", "unroll-jam{factors=1,8,1}"], "not a multiple of the vector width 16"),
        (["tile{sizes=4,4,4 kernel=nope}"], "no kernel named 'nope'"),
    ],
)
def test_bad_schedules_are_reported(passes: list[str], message: str) -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(8, 8, 8)).parse_module()
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_passes(ctx, module, passes)


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


def fused_src(m: int, k: int, n: int, private: str) -> str:
    """A kernel as outline-kernels makes it from a fused group: bias init, matmul, +residual, relu.
    Argument 3 (the matmul's output) is private when `private` lists it."""
    attr = f" attributes {{ziggurat.private_args = array<i64: {private}>}}" if private else ""
    return f"""
func.func @kernel(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %bias: memref<{n}xf32>, %t: memref<{m}x{n}xf32>, %res: memref<{m}x{n}xf32>, %y: memref<{m}x{n}xf32>){attr} {{
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}} ins(%bias : memref<{n}xf32>) outs(%t : memref<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }}
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : memref<{m}x{k}xf32>, memref<{k}x{n}xf32>) outs(%t : memref<{m}x{n}xf32>) {{{BODY_MAC}  }}
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}} ins(%t, %res : memref<{m}x{n}xf32>, memref<{m}x{n}xf32>) outs(%y : memref<{m}x{n}xf32>) {{
  ^bb0(%p: f32, %r: f32, %o: f32):
    %s = arith.addf %p, %r : f32
    %z = arith.constant 0.0 : f32
    %q = arith.maximumf %s, %z : f32
    linalg.yield %q : f32
  }}
  func.return
}}"""


@pytest.mark.parametrize("k_tile", [0, 4, 5, 16])
@pytest.mark.parametrize("private", ["3", ""])
def test_fused_prologue_and_epilogue(k_tile: int, private: str) -> None:
    """The initializer runs in registers, the epilogue on the finished accumulator; with reduction
    cache tiles the partial sums go through the output buffer between the first and last tile."""
    m, k, n = 6, 17, 40
    src = fused_src(m, k, n, private)
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, ["default-schedule{width=16}", f"tile{{sizes=0,0,{k_tile} op=1}}", "convert-linalg-to-loops"])
    text = str(module)
    assert text.count("vector.fma") > 0
    loops_of_kernel = text.count("scf.for")
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    res = RNG.standard_normal((m, n)).astype(np.float32)
    module = Parser(make_context(), src).parse_module()
    ctx = make_context()
    run_passes(ctx, module, ["default-schedule{width=16}", f"tile{{sizes=0,0,{k_tile} op=1}}", "convert-linalg-to-loops", *LEVEL_PASSES["llvm-dialect"]])
    t = aligned_empty((m, n))
    y = aligned_empty((m, n))
    compile_module(module).function("kernel")(*[aligned_copy(x) for x in (a, b, bias)], t, aligned_copy(res), y)
    ref = np.maximum(a @ b + bias + res, 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    if not private:  # T escapes the kernel: the epilogue stays a loop nest of its own, T is exact
        np.testing.assert_allclose(t, a @ b + bias, rtol=1e-4, atol=1e-5)
    assert loops_of_kernel > 0
