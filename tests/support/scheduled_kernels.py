"""Buffer-level linalg kernels as MLIR text, lowered through schedule passes,
convert-linalg-to-loops and the LLVM conversions, and run as machine code.

Shared by the tests of convert-linalg-to-loops (tests/passes/conversions/linalg_to_loops/) and of
the schedule passes (tests/passes/transforms/test_tile.py, test_pack.py, test_parallelize.py, ...).
Every kernel is `func.func @kernel` with its output buffer(s) last.
"""

from __future__ import annotations

import math
import random

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.runtime import aligned_copy, aligned_empty
from dialects.sched import Schedule
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.attached import schedule_of
from passes.schedule.rules import reduction_vector_problem

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


def run_kernel(
    src: str,
    schedule_passes: list[str],
    args: list[np.ndarray],
    out_shape: tuple[int, ...],
    init: np.ndarray | None = None,
) -> np.ndarray:
    """Lower and run @kernel(*args, out); `init`: the output's contents before the call (for a
    kernel that accumulates into it)."""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(
        ctx,
        module,
        [*schedule_passes, "convert-linalg-to-loops", *LEVELS["llvm-dialect"]],
        verify_each=True,
    )
    out = aligned_empty(out_shape) if init is None else aligned_copy(init)
    compile_module(module).function("kernel")(*[aligned_copy(a) for a in args], out)
    return out


MAX_UNROLLED_BODIES = 64
"""The most body copies a random schedule's unroll-jam factors make (their product)."""


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
        # the innermost reduction loop of the order, where its partials combine
        innermost = [d for d in order if info.iterators[d] == "reduction"][-1:]
        if innermost and reduction_vector_problem(info, innermost[0]) is None:
            vec_candidates.append(innermost[0])
        vec = rng.choice([*vec_candidates, -1])
        unroll = []
        for d in range(n):
            if d == vec:
                unroll.append(width * rng.choice([1, 2]))
            else:
                unroll.append(rng.choice([1, 2, 3]))
        # at most MAX_UNROLLED_BODIES copies of the body (a vectorized loop's factor counts in
        # vectors): larger products test nothing new and take half a minute to compile

        def copies(d: int, factors: list[int] = unroll, vec: int = vec, width: int = width) -> int:
            return factors[d] // width if d == vec else factors[d]

        while math.prod(copies(d) for d in range(n)) > MAX_UNROLLED_BODIES:
            d = max(range(n), key=copies)
            unroll[d] = width if d == vec else 1
        passes = [
            f"tile{{sizes={','.join(map(str, tiles))}}}",
            f"interchange{{order={','.join(map(str, order))}}}",
            f"vectorize{{dim={vec} width={width}}}",
            f"unroll-jam{{factors={','.join(map(str, unroll))}}}",
        ]
        out.append(passes)
    return out


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


Loop = tuple[int | None, int | None, int | None, list["Loop"]]
"""An scf.for as (lower bound, upper bound, step, the loops nested in it); a bound that is not
an arith.constant is None."""


def loop_nest(module: ModuleOp) -> list[Loop]:
    """The scf.for loops of `module`, outermost first, each with the loops nested in it."""

    def const(value: SSAValue) -> int | None:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def loops_in(op: Operation) -> list[Loop]:
        found: list[Loop] = []
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    if isinstance(inner, scf.ForOp):
                        found.append(
                            (const(inner.lb), const(inner.ub), const(inner.step), loops_in(inner))
                        )
                    else:
                        found.extend(loops_in(inner))
        return found

    return loops_in(module)


def lowered(src: str, schedule_passes: list[str]) -> ModuleOp:
    """`src` after the schedule passes and convert-linalg-to-loops (verified after each pass)."""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, [*schedule_passes, "convert-linalg-to-loops"], verify_each=True)
    return module


def scheduled(src: str, schedule_passes: list[str]) -> list[Schedule]:
    """The schedule of every linalg.generic of `src` after the schedule passes, in order."""
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    run_passes(ctx, module, schedule_passes, verify_each=True)
    return [schedule_of(op) for op in module.walk() if isinstance(op, GenericOp)]
