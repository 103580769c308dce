"""Kernels for the measurement tests (tests/autotune/measure/): a small matmul task, and
kernels that crash or hang, as a bad candidate does."""

from __future__ import annotations

from autotune.task import Task

M, K, N = 16, 24, 32
BODY = """
  ^bb0(%in0: f32, %in1: f32, %acc0: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.{combine} %acc0, %p : f32
    linalg.yield %s : f32
"""


def matmul_ir(combine: str = "addf") -> str:
    a, b, c = f"memref<{M}x{K}xf32>", f"memref<{K}x{N}xf32>", f"memref<{M}x{N}xf32>"
    return f"""
func.func @kernel(%a: {a}, %b: {b}, %c: {c}) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : {c})
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : {a}, {b}) outs(%c : {c}) {{{BODY.format(combine=combine)}  }}
  func.return
}}"""


# stores 4 TiB past the output buffer: SIGSEGV
SEGFAULT_IR = f"""
func.func @kernel(%a: memref<{M}x{K}xf32>, %b: memref<{K}x{N}xf32>, %c: memref<{M}x{N}xf32>) {{
  %one = arith.constant 1.0 : f32
  %far = arith.constant 1099511627776 : index
  %r = memref.reinterpret_cast %c to offset: [0], sizes: [1099511627777], strides: [1] : memref<{M}x{N}xf32> to memref<1099511627777xf32>
  memref.store %one, %r[%far] : memref<1099511627777xf32>
  func.return
}}"""

# 2^62 dependent float additions: never ends
HANG_IR = f"""
func.func @kernel(%a: memref<{M}x{K}xf32>, %b: memref<{K}x{N}xf32>, %c: memref<{M}x{N}xf32>) {{
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 4611686018427387904 : index
  %s = scf.for %i = %c0 to %big step %c1 iter_args(%acc = %one) -> (f32) {{
    %n = arith.addf %acc, %one : f32
    scf.yield %n : f32
  }}
  memref.store %s, %c[%c0, %c0] : memref<{M}x{N}xf32>
  func.return
}}"""

TASK = Task(
    workload_key="test-measure-matmul-16x24x32",
    kernel_ir=matmul_ir(),
    weight=1,
    flops=2.0 * M * N * K,
    name="matmul 16x24x32",
    anchor=0,
)
SCHEDULED = [
    "default-schedule",
    "tile{sizes=4,16,8 op=0}",
    "interchange{order=0,2,1 op=0}",
    "vectorize{dim=1 width=8 op=0}",
    "unroll-jam{factors=2,8,1 op=0}",
]


def matmul_task(key: str, kernel_ir: str | None = None) -> Task:
    """A task named `key` whose kernel is `kernel_ir` (the matmul by default)."""
    return Task(
        workload_key=key,
        kernel_ir=matmul_ir() if kernel_ir is None else kernel_ir,
        weight=1,
        flops=2.0 * M * N * K,
        name=key,
        anchor=0,
    )
