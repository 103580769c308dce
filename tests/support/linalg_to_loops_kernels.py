"""Small buffer-level kernels for the unit tests of passes/conversions/linalg_to_loops/, parsed
without the compiler's pass registry (only the upstream dialects the kernels use)."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.vector import Vector
from xdsl.parser import Parser

from dialects.sched import Schedule
from passes.analysis.kernel_access import analyze_kernel
from passes.conversions.linalg_to_loops.loop_nest import LoopNestGenerator

BODY_MAC = """
  ^bb0(%in0: f32, %in1: f32, %acc0: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.addf %acc0, %p : f32
    linalg.yield %s : f32
"""

MATMUL_MAPS = (
    "[affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, "
    "affine_map<(m, n, k) -> (m, n)>]"
)


def matmul_src(m: int, k: int, n: int) -> str:
    """C = A @ B, C zero-filled first."""
    a, b, c = f"memref<{m}x{k}xf32>", f"memref<{k}x{n}xf32>", f"memref<{m}x{n}xf32>"
    return f"""
func.func @kernel(%a: {a}, %b: {b}, %c: {c}) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : {c})
  linalg.generic {{indexing_maps = {MATMUL_MAPS}, iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : {a}, {b}) outs(%c : {c}) {{{BODY_MAC}  }}
  func.return
}}"""


def fused_src(m: int, k: int, n: int, private: bool) -> str:
    """As outline-kernels makes a fused group: bias init of T, T += A @ B, Y = relu(T + R).
    T (argument 3) is a private intermediate when `private`."""
    attr = " attributes {ziggurat.private_args = array<i64: 3>}" if private else ""
    a, b, v, t = (
        f"memref<{m}x{k}xf32>",
        f"memref<{k}x{n}xf32>",
        f"memref<{n}xf32>",
        f"memref<{m}x{n}xf32>",
    )
    ident = "affine_map<(i, j) -> (i, j)>"
    return f"""
func.func @kernel(%a: {a}, %b: {b}, %bias: {v}, %t: {t}, %res: {t}, %y: {t}){attr} {{
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (j)>, {ident}], iterator_types = ["parallel", "parallel"]}} ins(%bias : {v}) outs(%t : {t}) {{
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }}
  linalg.generic {{indexing_maps = {MATMUL_MAPS}, iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : {a}, {b}) outs(%t : {t}) {{{BODY_MAC}  }}
  linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}], iterator_types = ["parallel", "parallel"]}} ins(%t, %res : {t}, {t}) outs(%y : {t}) {{
  ^bb0(%p: f32, %r: f32, %o: f32):
    %s = arith.addf %p, %r : f32
    %z = arith.constant 0.0 : f32
    %q = arith.maximumf %s, %z : f32
    linalg.yield %q : f32
  }}
  func.return
}}"""


def parse(src: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, Arith, MemRef, Linalg, Math, Scf, Vector):
        ctx.load_dialect(dialect)
    return Parser(ctx, src).parse_module()


def generics(module: ModuleOp) -> list[linalg.GenericOp]:
    return [op for op in module.walk() if isinstance(op, linalg.GenericOp)]


def matmul_generator(schedule: Schedule, m: int = 6, k: int = 5, n: int = 20) -> LoopNestGenerator:
    """The loop nest generator of matmul_src(m, k, n)'s kernel under `schedule`."""
    module = parse(matmul_src(m, k, n))
    return LoopNestGenerator(analyze_kernel(generics(module)[0]), schedule)
