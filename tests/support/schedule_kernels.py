"""Small buffer-level kernels for the tests of passes/schedule/, parsed without the compiler."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

from dialects.sched import Sched
from passes.analysis.kernel_access import KernelInfo, analyze_kernel

MATMUL_MAPS = (
    "[affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, "
    "affine_map<(i, j, k) -> (i, j)>]"
)


def matmul(m: int = 64, k: int = 128, n: int = 64, schedule: str = "") -> str:
    """C[m, n] += A[m, k] * B[k, n] as one linalg.generic in `func.func @matmul`, with the
    `#sched.schedule<...>` parameters `schedule` attached when given."""
    attrs = f" attrs = {{sched.schedule = #sched.schedule<{schedule}>}}" if schedule else ""
    return f"""
func.func @matmul(%a: memref<{m}x{k}xf32>, %b: memref<{k}x{n}xf32>, %c: memref<{m}x{n}xf32>) {{
  linalg.generic {{indexing_maps = {MATMUL_MAPS},
                  iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : memref<{m}x{k}xf32>, memref<{k}x{n}xf32>) outs(%c : memref<{m}x{n}xf32>){attrs} {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


def panel_matmul(panels: int = 96, m: int = 128, k: int = 768, p: int = 32) -> str:
    """C[q, i, j] += A[i, k] * B[q, k, j]: the product of pack-weights, A's rows against each
    contiguous panel of P columns of B."""
    return f"""
func.func @panel_matmul(%a: memref<{m}x{k}xf32>, %b: memref<{panels}x{k}x{p}xf32>,
                        %c: memref<{panels}x{m}x{p}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(q, i, j, k) -> (i, k)>,
                                   affine_map<(q, i, j, k) -> (q, k, j)>,
                                   affine_map<(q, i, j, k) -> (q, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%a, %b : memref<{m}x{k}xf32>, memref<{panels}x{k}x{p}xf32>)
      outs(%c : memref<{panels}x{m}x{p}xf32>) {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %r = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %r : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


def blocked_conv(icb: int = 16, ocb: int = 32, hw: int = 4, k: int = 3, b: int = 16) -> str:
    """A stride-1 convolution in NCHW[b]c, as blocked-layout writes it: out[o, y, x, c] +=
    in[i, y + ky, x + kx, l] * w[o, i, ky, kx, l, c] (padded input, b-channel blocks)."""
    h = hw + k - 1
    return f"""
func.func @blocked_conv(%in: memref<{icb}x{h}x{h}x{b}xf32>, %w: memref<{ocb}x{icb}x{k}x{k}x{b}x{b}xf32>,
                        %out: memref<{ocb}x{hw}x{hw}x{b}xf32>) {{
  linalg.generic {{indexing_maps = [
        affine_map<(o, y, x, c, i, ky, kx, l) -> (i, y + ky, x + kx, l)>,
        affine_map<(o, y, x, c, i, ky, kx, l) -> (o, i, ky, kx, l, c)>,
        affine_map<(o, y, x, c, i, ky, kx, l) -> (o, y, x, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction", "reduction"]}}
      ins(%in, %w : memref<{icb}x{h}x{h}x{b}xf32>, memref<{ocb}x{icb}x{k}x{k}x{b}x{b}xf32>)
      outs(%out : memref<{ocb}x{hw}x{hw}x{b}xf32>) {{
  ^bb0(%a: f32, %q: f32, %acc: f32):
    %r = arith.mulf %a, %q : f32
    %s = arith.addf %acc, %r : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


def rows(n: int, m: int, body: str = "%s = arith.addf %acc, %a : f32") -> str:
    """y[i] combines x[i, :] with `body` (result %s): a softmax or layer-norm row's reduction,
    the kernel a reduction split is for."""
    return f"""
func.func @rows(%x: memref<{n}x{m}xf32>, %y: memref<{n}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}}
      ins(%x : memref<{n}x{m}xf32>) outs(%y : memref<{n}xf32>) {{
  ^bb0(%a: f32, %acc: f32):
    {body}
    linalg.yield %s : f32
  }}
  func.return
}}
"""


def conv(cin: int = 16, cout: int = 32, hw: int = 18, k: int = 3) -> str:
    """out[co, y, x] += in[ci, y + ky, x + kx] * w[co, ci, ky, kx]: three reduction loops."""
    o = hw - k + 1
    return f"""
func.func @conv(%in: memref<{cin}x{hw}x{hw}xf32>, %w: memref<{cout}x{cin}x{k}x{k}xf32>,
                %out: memref<{cout}x{o}x{o}xf32>) {{
  linalg.generic {{indexing_maps = [
        affine_map<(co, y, x, ci, ky, kx) -> (ci, y + ky, x + kx)>,
        affine_map<(co, y, x, ci, ky, kx) -> (co, ci, ky, kx)>,
        affine_map<(co, y, x, ci, ky, kx) -> (co, y, x)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}}
      ins(%in, %w : memref<{cin}x{hw}x{hw}xf32>, memref<{cout}x{cin}x{k}x{k}xf32>)
      outs(%out : memref<{cout}x{o}x{o}xf32>) {{
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


RELU = """
func.func @relu(%x: memref<4x32xf32>, %y: memref<4x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x32xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %v, %zero : f32
    linalg.yield %r : f32
  }
  func.return
}
"""
"""An elementwise kernel whose body compares lane values: it stays scalar."""

ADD = """
func.func @add(%x: memref<8x32xf32>, %y: memref<8x32xf32>, %z: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%z : memref<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def context() -> Context:
    ctx = Context()
    for dialect in (
        builtin.Builtin,
        func.Func,
        arith.Arith,
        math.Math,
        memref.MemRef,
        Linalg,
        Sched,
    ):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def generics(module: ModuleOp) -> list[GenericOp]:
    return [op for op in module.walk() if isinstance(op, GenericOp)]


def kernel(text: str) -> tuple[GenericOp, KernelInfo]:
    """The only linalg.generic of `text`, and its analysis."""
    (op,) = generics(parse(text))
    return op, analyze_kernel(op)
