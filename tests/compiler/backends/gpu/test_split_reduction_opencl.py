"""Split reductions (passes/schedule/reduction_split.py, linalg_to_gpu/split.py) run for real
on OpenCL (PoCL) against numpy: every combiner kind the models use, lane counts that are and
are not powers of two, several accumulators per lane group, a fused fill and epilogue, and the
grid and block the split asks for."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.backends.gpu.compile import load_program
from compiler.backends.gpu.opencl_runtime import opencl_available
from compiler.pass_runner import make_context
from passes.conversions.linalg_to_gpu import ConvertLinalgToGpuPass
from tests.support.schedule_kernels import parse

pytestmark = pytest.mark.skipif(
    opencl_available() is not None, reason=f"OpenCL: {opencl_available()}"
)

ROWS, COLS = 12, 1680  # 1680 = 2^4 * 3 * 5 * 7: divisible by every lane count tested


def row_reduction(combine: str, init: str, epilogue: str, schedule: str) -> str:
    """y[i] = epilogue(combine over j of x[i, j], starting from init), one kernel function."""
    epi = ""
    if epilogue:
        epi = f"""
  linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}}
      ins(%y : memref<{ROWS}xf32>) outs(%y : memref<{ROWS}xf32>) {{
  ^bb0(%v: f32, %o: f32):
    %h = arith.constant 0.5 : f32
    %e = {epilogue} %v, %h : f32
    linalg.yield %e : f32
  }}"""
    return f"""
func.func private @reduce(%x: memref<{ROWS}x{COLS}xf32>, %y: memref<{ROWS}xf32>) {{
  %z = arith.constant {init} : f32
  linalg.fill ins(%z : f32) outs(%y : memref<{ROWS}xf32>)
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}}
      ins(%x : memref<{ROWS}x{COLS}xf32>) outs(%y : memref<{ROWS}xf32>)
      attrs = {{sched.schedule = #sched.schedule<{schedule}>}} {{
  ^bb0(%a: f32, %acc: f32):
    %s = {combine} %acc, %a : f32
    linalg.yield %s : f32
  }}{epi}
  func.return
}}
func.func @main(%x: memref<{ROWS}x{COLS}xf32>, %y: memref<{ROWS}xf32>) {{
  func.call @reduce(%x, %y) : (memref<{ROWS}x{COLS}xf32>, memref<{ROWS}xf32>) -> ()
  func.return
}}
"""


def run(text: str, inputs: list[np.ndarray], out_shape: tuple[int, ...]):
    module = parse(text)
    ConvertLinalgToGpuPass(target="opencl-gpu").apply(make_context(), module)
    module.verify()
    program = load_program(module, "opencl", len(inputs))
    out = np.full(out_shape, np.nan, np.float32)
    program.function("main")(*inputs, out)
    return module, program, out


X = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
COMBINERS = {
    "sum": ("arith.addf", "0.0", lambda x: x.sum(axis=1)),
    "max": ("arith.maximumf", "0xFF800000", lambda x: x.max(axis=1)),
    "min": ("arith.minimumf", "0x7F800000", lambda x: x.min(axis=1)),
    "product": ("arith.mulf", "1.0", lambda x: np.prod(1 + x / 1000, axis=1)),
}


@pytest.mark.parametrize("lanes", [2, 7, 8, 12, 105])
@pytest.mark.parametrize("kind", list(COMBINERS))
def test_row_reductions_split_across_lanes(kind: str, lanes: int) -> None:
    op, init, reference = COMBINERS[kind]
    x = 1 + X / 1000 if kind == "product" else X
    schedule = (
        f"tile = [4, 0], order = [0, 1], unroll = [1, 4], vector = -1, width = 1, split = {lanes}"
    )
    module, program, y = run(row_reduction(op, init, "", schedule), [x], (ROWS,))
    np.testing.assert_allclose(y, reference(X), rtol=2e-5, atol=1e-4)
    (launch,) = program.plan.launches
    assert (launch.grid, launch.block) == ((ROWS // 4, 1, 1), (4 * lanes, 1, 1))
    assert "partials" in str(module)


@pytest.mark.parametrize("lanes", [3, 16])
def test_the_epilogue_runs_once_on_the_total(lanes: int) -> None:
    """mean-like: (sum + 0) * 0.5, applied by lane 0 after the tree, not by every lane."""
    schedule = (
        f"tile = [0, 0], order = [0, 1], unroll = [2, 1], vector = -1, width = 1, split = {lanes}"
    )
    _, program, y = run(row_reduction("arith.addf", "0.0", "arith.mulf", schedule), [X], (ROWS,))
    np.testing.assert_allclose(y, X.sum(axis=1) * 0.5, rtol=2e-5, atol=1e-4)
    (launch,) = program.plan.launches
    assert launch.block == ((ROWS // 2) * lanes, 1, 1)


def test_a_split_matmul_keeps_a_register_tile_per_lane_group() -> None:
    """4 accumulators per lane group (unroll 2 x 2), 16 lanes each, K = 256."""
    m, k, n = 4, 256, 8
    text = f"""
func.func private @matmul(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %c: memref<{m}x{n}xf32>) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<{m}x{n}xf32>)
  linalg.generic {{indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>,
                                   affine_map<(i, j, l) -> (i, j)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : memref<{m}x{k}xf32>, memref<{k}x{n}xf32>) outs(%c : memref<{m}x{n}xf32>)
      attrs = {{sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2],
                unroll = [2, 2, 2], vector = -1, width = 1, split = 16>}} {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }}
  func.return
}}
func.func @main(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %c: memref<{m}x{n}xf32>) {{
  func.call @matmul(%a, %b, %c) : (memref<{m}x{k}xf32>, memref<{k}x{n}xf32>, memref<{m}x{n}xf32>) -> ()
  func.return
}}
"""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    _, program, c = run(text, [a, b], (m, n))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)
    assert program.plan.launches[0].block == ((m // 2) * (n // 2) * 16, 1, 1)
