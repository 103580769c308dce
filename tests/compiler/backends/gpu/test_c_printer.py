"""compiler/backends/gpu/c_printer.py: kernels printed as OpenCL C and run on PoCL against numpy
(loop-level kernels as one work-item, a hand-written gpu.module on several work-groups), every
kernel of two models checked against the CPU back end, and the CUDA text compiled by nvcc."""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, MemRefType, ModuleOp, StringAttr
from xdsl.dialects.func import Func
from xdsl.dialects.gpu import GPU
from xdsl.dialects.gpu import ModuleOp as GpuModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.vector import Vector
from xdsl.parser import Parser

from compiler import zoo
from compiler.backends.gpu.c_printer import FLAVOURS, PrintError, print_function, print_module
from compiler.backends.llvm_cpu.compile import compile_module
from compiler.model import import_model, lower
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from passes.conversions.linalg_to_loops.convert import fill_to_generic
from tests.support.scheduled_kernels import fused_src, lowered, matmul_src

NVCC = shutil.which("nvcc")


# -- harness -------------------------------------------------------------------------------------


@dataclass
class OpenCL:
    """pyopencl, a context on the first device (PoCL here) and a queue."""

    cl: Any
    ctx: Any
    queue: Any

    def build(self, source: str) -> Any:
        return self.cl.Program(self.ctx, source).build()


@pytest.fixture(scope="module")
def opencl() -> OpenCL:
    cl = pytest.importorskip("pyopencl", reason="pyopencl runs the OpenCL kernels")
    platforms = cl.get_platforms()
    if not platforms or not platforms[0].get_devices():
        pytest.skip("no OpenCL device")
    ctx = cl.Context([platforms[0].get_devices()[0]])
    return OpenCL(cl, ctx, cl.CommandQueue(ctx))


def run_opencl(
    env: OpenCL,
    source: str,
    name: str,
    arrays: Sequence[np.ndarray],
    global_size: tuple[int, ...] = (1,),
    local_size: tuple[int, ...] = (1,),
    byte_offsets: Sequence[int] | None = None,
) -> list[np.ndarray]:
    """Build `source`, run kernel `name` with one buffer per argument (holding a copy of the
    array `byte_offsets[k]` bytes in, passed with that offset as the convention says) and
    return the arrays as the kernel left them."""
    cl, ctx, queue = env.cl, env.ctx, env.queue
    program = env.build(source)
    offsets = list(byte_offsets or [0] * len(arrays))
    hosts, args = [], []
    for a, offset in zip(arrays, offsets):
        host = np.zeros(offset + a.nbytes, np.uint8)
        host[offset:] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        hosts.append(host)
        args += [buf, np.uint64(offset)]
    getattr(program, name)(queue, global_size, local_size, *args)
    out = []
    for host, buf, a, offset in zip(hosts, args[::2], arrays, offsets):
        cl.enqueue_copy(queue, host, buf)
        queue.finish()
        out.append(host[offset:].view(a.dtype).reshape(a.shape).copy())
    return out


def nvcc_compiles(source: str, tmp_path: Path) -> None:
    """nvcc (CUDA C++ for sm_90) accepts `source`; skipped without nvcc."""
    if NVCC is None:
        pytest.skip("nvcc is not installed: the CUDA text is printed but not compiled")
    path = tmp_path / "kernels.cu"
    path.write_text(source)
    done = subprocess.run(
        [NVCC, "-ptx", "-arch=sm_90", "-o", "/dev/null", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def loop_kernel(src: str, passes: list[str], name: str) -> func.FuncOp:
    """The func.func of `src` after the schedule passes and convert-linalg-to-loops, renamed
    (`kernel` is an OpenCL keyword)."""
    module = lowered(src, passes)
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    fn.sym_name = StringAttr(name)
    return fn


def parse(src: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, GPU, MemRef, Arith, Scf, Math, Vector, Func):
        ctx.load_dialect(dialect)
    return Parser(ctx, src).parse_module()


def first_func(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


RNG = np.random.default_rng(7)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -- loop-level kernels on one work-item ---------------------------------------------------------


@pytest.mark.parametrize(
    "n, passes, printed",
    [
        (20, ["vectorize{dim=1 width=4}", "unroll-jam{factors=2,8,1}"], "vload4"),
        (22, ["vectorize{dim=1 width=16}"], "float8"),  # a 6-lane tail in a float8
        (20, ["vectorize{dim=0 width=4}"], "float v0[4];"),  # a gather via a private buffer
        (20, ["vectorize{dim=-1}", "tile{sizes=4,8,2}"], "for ("),
    ],
    ids=["width4", "width16-tail6", "gather", "scalar-tiled"],
)
def test_matmul(opencl: OpenCL, n: int, passes: list[str], printed: str) -> None:
    """Vector widths, tails, gathers and tiles of the CPU loop level, as one work-item."""
    fn = loop_kernel(matmul_src(6, 5, n), passes, "matmul")
    source = print_function(fn, "opencl")
    assert printed in source
    a, b = randn(6, 5), randn(5, n)
    _, _, c = run_opencl(opencl, source, "matmul", [a, b, np.full((6, n), np.nan, np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_device_function(opencl: OpenCL) -> None:
    """kernel=False: a plain function taking one pointer per memref, called here by a kernel."""
    fn = loop_kernel(matmul_src(3, 4, 5), ["vectorize{dim=1 width=2}"], "matmul")
    cuda = print_function(fn, "cuda", kernel=False)
    assert "__device__ void matmul(float* arg0, float* arg1, float* arg2)" in cuda
    source = print_function(fn, "opencl", kernel=False)
    assert "__kernel" not in source
    params = ", ".join(f"__global float* {x}, const ulong {x}_offset" for x in "abc")
    source += f"__kernel void call({params}) {{ matmul(a, b, c); }}\n"
    a, b = randn(3, 4), randn(4, 5)
    _, _, c = run_opencl(opencl, source, "call", [a, b, np.zeros((3, 5), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("private", ["", "3"])
def test_fused_matmul_bias_residual_relu(opencl: OpenCL, private: str) -> None:
    """A fused group as outline-kernels makes it; its intermediate (argument 3) private or not."""
    fn = loop_kernel(fused_src(6, 5, 20, private), ["vectorize{op=1 dim=1 width=8}"], "fused")
    a, b, bias, res = randn(6, 5), randn(5, 20), randn(20), randn(6, 20)
    t, y = np.full((6, 20), np.nan, np.float32), np.zeros((6, 20), np.float32)
    out = run_opencl(opencl, print_function(fn, "opencl"), "fused", [a, b, bias, t, res, y])
    np.testing.assert_allclose(out[5], np.maximum(a @ b + bias + res, 0), rtol=1e-5, atol=1e-5)
    if not private:
        np.testing.assert_allclose(out[3], a @ b + bias, rtol=1e-5, atol=1e-5)


SOFTMAX = """
func.func @kernel(%x: memref<5x19xf32>, %m: memref<5xf32>, %e: memref<5x19xf32>, %s: memref<5xf32>, %y: memref<5x19xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<5xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<5x19xf32>) outs(%m : memref<5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<5x19xf32>, memref<5xf32>) outs(%e : memref<5x19xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%s : memref<5xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%e : memref<5x19xf32>) outs(%s : memref<5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%e, %s : memref<5x19xf32>, memref<5xf32>) outs(%y : memref<5x19xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  }
  func.return
}"""


@pytest.mark.parametrize(
    "passes",
    [
        [],
        [
            "vectorize{op=0 dim=0 width=4}",
            "vectorize{op=1 dim=1 width=8}",
            "vectorize{op=2 dim=0 width=2}",
            "vectorize{op=3 dim=1 width=16}",
        ],
        ["vectorize{dim=-1}"],
    ],
    ids=["default", "vectors", "scalar"],
)
def test_softmax(opencl: OpenCL, passes: list[str]) -> None:
    """max, exp, sum, divide: reductions and broadcasts, scalar and on vectors of 2..16 lanes."""
    fn = loop_kernel(SOFTMAX, passes, "softmax")
    x = randn(5, 19) * 4
    x[2, 3] = 60.0  # exp overflows unless the max is subtracted first
    args = [x] + [np.full(shape, np.nan, np.float32) for shape in [5, (5, 19), 5, (5, 19)]]
    _, m, _, s, y = run_opencl(opencl, print_function(fn, "opencl"), "softmax", args)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m, x.max(axis=1))
    np.testing.assert_allclose(s, e.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


ELEMENTWISE = """
func.func @kernel(%x: memref<4x10xf32>, %y: memref<4x10xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x10xf32>) outs(%y : memref<4x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %h = arith.constant 0.5 : f32
    %pos = arith.cmpf ugt, %a, %z : f32
    %e = math.erf %a : f32
    %t = math.tanh %a : f32
    %th = arith.mulf %t, %h : f32
    %s = arith.select %pos, %e, %th : f32
    %m = arith.maximumf %s, %a : f32
    %n = arith.minnumf %m, %h : f32
    %r = arith.addf %m, %n : f32
    linalg.yield %r : f32
  }
  func.return
}"""


def test_elementwise_erf_tanh_select_cmpf(opencl: OpenCL) -> None:
    """Unordered comparison, select and NaN-propagating maximumf on NaN, inf and signed zeros."""
    fn = loop_kernel(ELEMENTWISE, [], "elementwise")
    x = randn(4, 10) * 2
    x[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    _, y = run_opencl(opencl, print_function(fn, "opencl"), "elementwise", [x, np.zeros_like(x)])
    erf = np.vectorize(math.erf)(x.astype(np.float64)).astype(np.float32)
    s = np.where(~(x <= 0), erf, np.tanh(x) * np.float32(0.5))  # ugt: true on NaN
    m = np.where(np.isnan(s) | np.isnan(x), np.nan, np.maximum(s, x))  # maximumf keeps NaN
    n = np.fmin(m, np.float32(0.5))  # minnumf ignores it
    np.testing.assert_allclose(y, m + n, rtol=1e-5, atol=1e-6)
    assert np.isnan(y[0, 0]) and y[0, 1] == np.inf


INTEGER = """
func.func @kernel(%a: memref<3x7xi64>, %b: memref<3x7xi64>, %y: memref<3x7xi64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<3x7xi64>, memref<3x7xi64>) outs(%y : memref<3x7xi64>) {
  ^bb0(%p: i64, %q: i64, %o: i64):
    %c3 = arith.constant 3 : i64
    %c7 = arith.constant -7 : i64
    %big = arith.constant 1099511627776 : i64
    %m = arith.muli %p, %c3 : i64
    %d = arith.subi %m, %q : i64
    %lt = arith.cmpi slt, %p, %q : i64
    %ult = arith.cmpi ult, %p, %q : i64
    %f = arith.floordivsi %d, %c7 : i64
    %r = arith.remsi %d, %c7 : i64
    %s = arith.select %lt, %f, %r : i64
    %t = arith.addi %s, %big : i64
    %u = arith.select %ult, %t, %s : i64
    %mx = arith.maxsi %u, %q : i64
    %x = arith.xori %mx, %p : i64
    linalg.yield %x : i64
  }
  func.return
}"""


def test_integer_i64(opencl: OpenCL) -> None:
    """i64 arithmetic beyond 32 bits, signed and unsigned comparisons, floor division, select."""
    fn = loop_kernel(INTEGER, [], "integer")
    a = RNG.integers(-(2**40), 2**40, (3, 7), dtype=np.int64)
    b = RNG.integers(-(2**40), 2**40, (3, 7), dtype=np.int64)
    a[0, :3] = [-5, 5, 0]
    b[0, :3] = [3, -3, 0]
    _, _, y = run_opencl(opencl, print_function(fn, "opencl"), "integer", [a, b, np.zeros_like(a)])
    d = a * 3 - b
    f = np.floor_divide(d, -7)
    r = np.fmod(d, -7)  # remsi: the sign of the dividend
    s = np.where(a < b, f, r)
    u = np.where(a.view(np.uint64) < b.view(np.uint64), s + 2**40, s)
    np.testing.assert_array_equal(y, np.maximum(u, b) ^ a)


STRIDED = """
func.func @kernel(%x: memref<4x6xf32, strided<[10, 1], offset: 12>>, %y: memref<4x6xf32, strided<[12, 2], offset: 1>>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x6xf32, strided<[10, 1], offset: 12>>) outs(%y : memref<4x6xf32, strided<[12, 2], offset: 1>>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 2.0 : f32
    %r = arith.mulf %a, %c : f32
    %s = arith.subf %r, %o : f32
    linalg.yield %s : f32
  }
  func.return
}"""


def view(root: np.ndarray, offset: int, strides: tuple[int, int]) -> np.ndarray:
    """The 4x6 memref view of a root buffer: the element offset and strides of its type."""
    step = root.itemsize
    return np.lib.stride_tricks.as_strided(
        root[offset:], (4, 6), (strides[0] * step, strides[1] * step)
    )


@pytest.mark.parametrize("passes", [[], ["vectorize{dim=1 width=4}"]], ids=["scalar", "vector"])
def test_strided_arguments(opencl: OpenCL, passes: list[str]) -> None:
    """Views with offsets and strides as arguments: the kernel applies the type's layout to the
    root buffer, which comes with a nonzero byte offset."""
    fn = loop_kernel(STRIDED, passes, "strided")
    root_x, root_y = randn(48), randn(48)
    _, y = run_opencl(
        opencl, print_function(fn, "opencl"), "strided", [root_x, root_y], byte_offsets=[64, 12]
    )
    expected = root_y.copy()
    target = view(expected, 1, (12, 2))
    target[...] = view(root_x, 12, (10, 1)) * 2 - view(root_y, 1, (12, 2))
    np.testing.assert_array_equal(y, expected)  # elements outside the view are kept


# -- scalar semantics, one op at a time ----------------------------------------------------------

FLOATS = [0.1, -0.0, 1e-45, 1.1754942e-38, 3.4028235e38, 1.0 / 3.0, 16777217.0, -2.5e-7]


def test_float_constants_are_exact(opencl: OpenCL) -> None:
    values = np.array([*FLOATS, np.inf, -np.inf, np.nan])
    stores = []
    for i, x in enumerate(values):
        f32 = f"0x{np.float32(x).view(np.uint32):08X}"  # MLIR reads hex as the exact bits
        f64 = f"0x{np.float64(x).view(np.uint64):016X}"
        stores += [
            f"%i{i} = arith.constant {i} : index",
            f"%f{i} = arith.constant {f32} : f32",
            f"memref.store %f{i}, %y[%i{i}] : memref<11xf32>",
            f"%d{i} = arith.constant {f64} : f64",
            f"memref.store %d{i}, %z[%i{i}] : memref<11xf64>",
        ]
    body = "\n  ".join(stores)
    src = (
        f"func.func @consts(%y: memref<11xf32>, %z: memref<11xf64>) {{\n  {body}\n  func.return\n}}"
    )
    source = print_function(first_func(parse(src)), "opencl")
    assert "cl_khr_fp64" in source
    y, z = run_opencl(opencl, source, "consts", [np.zeros(11, np.float32), np.zeros(11)])
    np.testing.assert_array_equal(
        y[:10].view(np.uint32), values[:10].astype(np.float32).view(np.uint32)
    )
    np.testing.assert_array_equal(z[:10].view(np.uint64), values[:10].view(np.uint64))
    assert np.isnan(y[10]) and np.isnan(z[10])


CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord"]
CMPF += ["ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def test_cmpf_predicates_with_nan(opencl: OpenCL) -> None:
    n = 6
    lines = []
    for k, pred in enumerate(CMPF):
        lines += [
            f"%k{k} = arith.constant {k} : index",
            f"%p{k} = arith.cmpf {pred}, %x, %w : f32",
            f"memref.store %p{k}, %out[%k{k}, %i] : memref<16x{n}xi1>",
        ]
    body = "\n    ".join(lines)
    src = f"""
func.func @cmpf(%a: memref<{n}xf32>, %b: memref<{n}xf32>, %out: memref<16x{n}xi1>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  scf.for %i = %c0 to %cn step %c1 {{
    %x = memref.load %a[%i] : memref<{n}xf32>
    %w = memref.load %b[%i] : memref<{n}xf32>
    {body}
  }}
  func.return
}}"""
    a = np.array([1, 2, np.nan, 3, np.nan, -0.0], np.float32)
    b = np.array([2, 2, 1, np.nan, np.nan, 0.0], np.float32)
    source = print_function(first_func(parse(src)), "opencl")
    *_, out = run_opencl(opencl, source, "cmpf", [a, b, np.full((16, n), 7, np.uint8)])
    uno = np.isnan(a) | np.isnan(b)
    lt, eq, gt = a < b, a == b, a > b
    never, always = np.zeros(n, bool), np.ones(n, bool)
    expected = [never, eq, gt, gt | eq, lt, lt | eq, lt | gt, ~uno]
    expected += [uno | eq, uno | gt, uno | gt | eq, uno | lt, uno | lt | eq, ~eq, uno, always]
    np.testing.assert_array_equal(out, np.array(expected, np.uint8))


I32_OPS = ["addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "ceildivsi", "ceildivui"]
I32_OPS += ["floordivsi", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui"]
I32_SHIFTS = ["shli", "shrsi", "shrui"]
CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _i32_reference(op: str, a: int, b: int) -> int:
    """MLIR's semantics of an i32 op on Python ints (a, b as signed values)."""
    ua, ub = a % 2**32, b % 2**32

    def trunc_div(x: int, y: int) -> int:
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    semantics: dict[str, Callable[[], int]] = {
        "addi": lambda: a + b,
        "subi": lambda: a - b,
        "muli": lambda: a * b,
        "divsi": lambda: trunc_div(a, b),
        "divui": lambda: ua // ub,
        "remsi": lambda: a - trunc_div(a, b) * b,
        "remui": lambda: ua % ub,
        "ceildivsi": lambda: -((-a) // b),
        "ceildivui": lambda: -((-ua) // ub),
        "floordivsi": lambda: a // b,
        "andi": lambda: a & b,
        "ori": lambda: a | b,
        "xori": lambda: a ^ b,
        "maxsi": lambda: max(a, b),
        "minsi": lambda: min(a, b),
        "maxui": lambda: max(ua, ub),
        "minui": lambda: min(ua, ub),
        "shli": lambda: a << (b % 32),
        "shrsi": lambda: a >> (b % 32),
        "shrui": lambda: ua >> (b % 32),
    }
    value = semantics[op]()
    return (value + 2**31) % 2**32 - 2**31


def test_i32_ops_and_cmpi(opencl: OpenCL) -> None:
    n = 8
    ops = I32_OPS + I32_SHIFTS
    lines = []
    for k, op in enumerate(ops):
        rhs = "%s" if op in I32_SHIFTS else "%w"
        lines += [
            f"%k{k} = arith.constant {k} : index",
            f"%r{k} = arith.{op} %x, {rhs} : i32",
            f"memref.store %r{k}, %out[%k{k}, %i] : memref<{len(ops)}x{n}xi32>",
        ]
    for k, pred in enumerate(CMPI):
        lines += [
            f"%q{k} = arith.constant {k} : index",
            f"%p{k} = arith.cmpi {pred}, %x, %w : i32",
            f"memref.store %p{k}, %cmp[%q{k}, %i] : memref<10x{n}xi1>",
        ]
    body = "\n    ".join(lines)
    src = f"""
func.func @ints(%a: memref<{n}xi32>, %b: memref<{n}xi32>, %sh: memref<{n}xi32>, %out: memref<{len(ops)}x{n}xi32>, %cmp: memref<10x{n}xi1>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  scf.for %i = %c0 to %cn step %c1 {{
    %x = memref.load %a[%i] : memref<{n}xi32>
    %w = memref.load %b[%i] : memref<{n}xi32>
    %s = memref.load %sh[%i] : memref<{n}xi32>
    {body}
  }}
  func.return
}}"""
    a = np.array([7, -7, 2**31 - 1, -(2**31), 100, -1, 0, 12345678], np.int32)
    b = np.array([2, 2, 3, 7, -3, 5, -9, -1000], np.int32)
    sh = np.array([0, 1, 31, 4, 3, 31, 7, 16], np.int32)
    source = print_function(first_func(parse(src)), "opencl")
    args = [a, b, sh, np.zeros((len(ops), n), np.int32), np.full((10, n), 7, np.uint8)]
    *_, out, cmp = run_opencl(opencl, source, "ints", args)
    for k, op in enumerate(ops):
        rhs = sh if op in I32_SHIFTS else b
        expected = [_i32_reference(op, int(x), int(y)) for x, y in zip(a, rhs)]
        np.testing.assert_array_equal(out[k], expected, err_msg=op)
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    expected_cmp = [a == b, a != b, a < b, a <= b, a > b, a >= b, ua < ub, ua <= ub]
    expected_cmp += [ua > ub, ua >= ub]
    np.testing.assert_array_equal(cmp, np.array(expected_cmp, np.uint8))


CASTS = """
func.func @casts(%f: memref<6xf32>, %i: memref<6xi32>, %b: memref<6xi8>, %fo: memref<3x6xf32>, %io: memref<6x6xi32>, %bo: memref<2x6xi8>, %lo: memref<6xi64>, %do: memref<6xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  scf.for %k = %c0 to %c6 step %c1 {
    %x = memref.load %f[%k] : memref<6xf32>
    %n = memref.load %i[%k] : memref<6xi32>
    %s = memref.load %b[%k] : memref<6xi8>
    %a1 = arith.sitofp %n : i32 to f32
    memref.store %a1, %fo[%c0, %k] : memref<3x6xf32>
    %a2 = arith.uitofp %n : i32 to f32
    memref.store %a2, %fo[%c1, %k] : memref<3x6xf32>
    %w = arith.extf %x : f32 to f64
    %w3 = arith.constant 3.0 : f64
    %wd = arith.divf %w, %w3 : f64
    memref.store %wd, %do[%k] : memref<6xf64>
    %nf = arith.truncf %wd : f64 to f32
    memref.store %nf, %fo[%c2, %k] : memref<3x6xf32>
    %b1 = arith.fptosi %x : f32 to i32
    memref.store %b1, %io[%c0, %k] : memref<6x6xi32>
    %ax = math.absf %x : f32
    %b2 = arith.fptoui %ax : f32 to i32
    memref.store %b2, %io[%c1, %k] : memref<6x6xi32>
    %b3 = arith.extsi %s : i8 to i32
    memref.store %b3, %io[%c2, %k] : memref<6x6xi32>
    %b4 = arith.extui %s : i8 to i32
    memref.store %b4, %io[%c3, %k] : memref<6x6xi32>
    %b5 = arith.bitcast %x : f32 to i32
    memref.store %b5, %io[%c4, %k] : memref<6x6xi32>
    %ix = arith.index_cast %n : i32 to index
    %iy = arith.addi %ix, %c1 : index
    %b6 = arith.index_cast %iy : index to i32
    memref.store %b6, %io[%c5, %k] : memref<6x6xi32>
    %t = arith.trunci %n : i32 to i8
    memref.store %t, %bo[%c0, %k] : memref<2x6xi8>
    %t2 = arith.addi %s, %s : i8
    memref.store %t2, %bo[%c1, %k] : memref<2x6xi8>
    %l = arith.extsi %n : i32 to i64
    %l2 = arith.constant 4294967296 : i64
    %l3 = arith.muli %l, %l2 : i64
    memref.store %l3, %lo[%k] : memref<6xi64>
  }
  func.return
}"""


def test_conversions(opencl: OpenCL) -> None:
    f = np.array([1.5, -2.7, 100.25, -0.0, 7e6, -3.5], np.float32)
    i = np.array([-1, 5, 2**31 - 1, -(2**31), 300, -129], np.int32)
    b = np.array([-128, 127, -1, 0, 100, -100], np.int8)
    outs = [np.zeros((3, 6), np.float32), np.zeros((6, 6), np.int32), np.zeros((2, 6), np.int8)]
    outs += [np.zeros(6, np.int64), np.zeros(6, np.float64)]
    source = print_function(first_func(parse(CASTS)), "opencl")
    _, _, _, fo, io, bo, lo, do = run_opencl(opencl, source, "casts", [f, i, b, *outs])
    np.testing.assert_array_equal(fo[0], i.astype(np.float32))
    np.testing.assert_array_equal(fo[1], i.view(np.uint32).astype(np.float32))
    np.testing.assert_array_equal(do, f.astype(np.float64) / 3)
    np.testing.assert_array_equal(fo[2], (f.astype(np.float64) / 3).astype(np.float32))
    np.testing.assert_array_equal(io[0], np.trunc(f).astype(np.int32))
    np.testing.assert_array_equal(io[1], np.trunc(np.abs(f)).astype(np.int32))
    np.testing.assert_array_equal(io[2], b.astype(np.int32))
    np.testing.assert_array_equal(io[3], b.view(np.uint8).astype(np.int32))
    np.testing.assert_array_equal(io[4], f.view(np.int32))
    np.testing.assert_array_equal(io[5], (i.astype(np.int64) + 1).astype(np.int32))
    np.testing.assert_array_equal(bo[0], i.astype(np.int8))
    np.testing.assert_array_equal(bo[1], (b.astype(np.int16) * 2).astype(np.int8))
    np.testing.assert_array_equal(lo, i.astype(np.int64) * 2**32)


UNARY = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf),
    "absf": np.abs,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "atanh": np.arctanh,
}
"""math ops of one operand on x in (-0.9, 0.9) (floats), with numpy's meaning."""
ROUNDING = {
    "floor": np.floor,
    "ceil": np.ceil,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),  # halves away from zero
    "roundeven": np.rint,  # halves to even
    "trunc": np.trunc,
}
BINARY = {
    "powf": lambda x, y: np.abs(x) ** y,
    "atan2": np.arctan2,
    "copysign": lambda x, y: np.copysign(x, -y),
    "maximumf": np.maximum,
    "minimumf": np.minimum,
    "maxnumf": np.fmax,
    "minnumf": np.fmin,
}


def math_kernel() -> tuple[str, list[str]]:
    """`@maths(x, y, h, n, out, vout)`: every op of UNARY / ROUNDING / BINARY, fpowi and acosh,
    row k of `out` on scalars in a loop, row k of `vout` on vector<4> halves."""
    names = [*UNARY, *ROUNDING, *BINARY, "fpowi", "acosh"]
    k = len(names)
    scalar, vector = [], []
    for row, name in enumerate(names):
        for body, t, suffix in ((scalar, "f32", "s"), (vector, "vector<4xf32>", "v")):
            a, b, h = f"%a{suffix}", f"%b{suffix}", f"%h{suffix}"
            r = f"%{name}{suffix}"
            if name in UNARY:
                body.append(f"{r} = math.{name} {a} : {t}")
            elif name in ROUNDING:
                body.append(f"{r} = math.{name} {h} : {t}")
            elif name == "acosh":
                body.append(f"{r} = math.acosh {b} : {t}")
            elif name == "fpowi":
                it = "i32" if suffix == "s" else "vector<4xi32>"
                body.append(f"{r} = math.fpowi {a}, %n{suffix} : {t}, {it}")
            else:
                dialect = "math" if name in ("powf", "atan2", "copysign") else "arith"
                lhs = f"%abs{suffix}" if name == "powf" else a
                rhs = f"%neg{suffix}" if name == "copysign" else b
                body.append(f"{r} = {dialect}.{name} {lhs}, {rhs} : {t}")
            body.append(f"%row{row}{suffix} = arith.constant {row} : index")
            if suffix == "s":
                body.append(f"memref.store {r}, %out[%row{row}s, %i] : memref<{k}x8xf32>")
            else:
                body.append(
                    f"vector.store {r}, %vout[%row{row}v, %j] : memref<{k}x8xf32>, vector<4xf32>"
                )
    loads = {
        "s": "memref.load %{0}[%i] : memref<8x{1}>",
        "v": "vector.load %{0}[%j] : memref<8x{1}>, vector<4x{1}>",
    }

    def prologue(suffix: str) -> list[str]:
        t = "f32" if suffix == "s" else "vector<4xf32>"
        lines = [
            f"%{v}{suffix} = " + loads[suffix].format(m, e)
            for v, m, e in (("a", "x", "f32"), ("b", "y", "f32"), ("h", "h", "f32"))
        ]
        lines.append(f"%n{suffix} = " + loads[suffix].format("n", "i32"))
        lines.append(f"%abs{suffix} = math.absf %a{suffix} : {t}")
        lines.append(f"%neg{suffix} = arith.negf %b{suffix} : {t}")
        return lines

    indent = "\n    "
    src = f"""
func.func @maths(%x: memref<8xf32>, %y: memref<8xf32>, %h: memref<8xf32>, %n: memref<8xi32>, %out: memref<{k}x8xf32>, %vout: memref<{k}x8xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {{
    {indent.join(prologue("s") + scalar)}
  }}
  scf.for %j = %c0 to %c8 step %c4 {{
    {indent.join(prologue("v") + vector)}
  }}
  func.return
}}"""
    return src, names


def test_math_functions(opencl: OpenCL, tmp_path: Path) -> None:
    """Every math op on scalars and on vector<4> (OpenCL's overloaded built-ins whole, CUDA's
    `...f` functions lane by lane) against numpy; the CUDA text compiles."""
    src, names = math_kernel()
    fn = first_func(parse(src))
    x = np.array([0.5, -0.25, 0.75, -0.875, 0.125, -0.5, 0.0625, 0.3], np.float32)
    y = np.array([1.5, 2.25, 1.125, 3.0, 1.75, 2.5, 1.0625, 2.0], np.float32)
    h = np.array([2.5, -2.5, 0.5, -0.5, 1.5, -1.7, 3.2, -0.0], np.float32)
    n = np.array([3, -2, 0, 5, 1, -1, 2, 4], np.int32)
    k = len(names)
    outs = [np.full((k, 8), np.nan, np.float32), np.full((k, 8), np.nan, np.float32)]
    *_, out, vout = run_opencl(opencl, print_function(fn, "opencl"), "maths", [x, y, h, n, *outs])
    for row, name in enumerate(names):
        if name in UNARY:
            with np.errstate(invalid="ignore"):  # log, sqrt of x < 0: NaN in C too
                expected = UNARY[name](x.astype(np.float64))
        elif name in ROUNDING:
            expected = ROUNDING[name](h)
        elif name in BINARY:
            expected = BINARY[name](x.astype(np.float64), y.astype(np.float64))
        elif name == "acosh":
            expected = np.arccosh(y.astype(np.float64))
        else:
            expected = x.astype(np.float64) ** n
        for got in (out[row], vout[row]):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)
    nvcc_compiles(print_function(fn, "cuda"), tmp_path)


UNREGISTERED = """
func.func @extra(%x: memref<6xf32>, %y: memref<6xf32>, %n: memref<6xi32>, %out: memref<3x6xf32>, %flags: memref<2x6xi1>, %wide: memref<6xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  scf.for %i = %c0 to %c6 step %c1 {
    %a = memref.load %x[%i] : memref<6xf32>
    %b = memref.load %y[%i] : memref<6xf32>
    %r = "arith.remf"(%a, %b) : (f32, f32) -> f32
    memref.store %r, %out[%c0, %i] : memref<3x6xf32>
    %e = "math.erfc"(%a) : (f32) -> f32
    memref.store %e, %out[%c1, %i] : memref<3x6xf32>
    %nan = "math.isnan"(%a) : (f32) -> i1
    memref.store %nan, %flags[%c0, %i] : memref<2x6xi1>
    %inf = "math.isinf"(%a) : (f32) -> i1
    memref.store %inf, %flags[%c1, %i] : memref<2x6xi1>
    %k = memref.load %n[%i] : memref<6xi32>
    %ki = "arith.index_castui"(%k) : (i32) -> index
    %kw = "arith.index_castui"(%ki) : (index) -> i64
    memref.store %kw, %wide[%i] : memref<6xi64>
  }
  func.return
}"""


def test_ops_xdsl_does_not_define(opencl: OpenCL) -> None:
    """arith.remf, math.erfc, math.isnan / isinf and arith.index_castui, parsed as unregistered
    ops, print by their names."""
    ctx = Context(allow_unregistered=True)
    for dialect in (Builtin, MemRef, Arith, Scf, Math, Func):
        ctx.load_dialect(dialect)
    fn = first_func(Parser(ctx, UNREGISTERED).parse_module())
    x = np.array([5.5, -5.5, np.nan, np.inf, -np.inf, 0.75], np.float32)
    y = np.array([2.0, 2.0, 1.0, 1.0, 3.0, -0.5], np.float32)
    n = np.array([1, -1, 0, 7, -(2**31), 2**31 - 1], np.int32)
    outs = [np.zeros((3, 6), np.float32), np.full((2, 6), 9, np.uint8), np.zeros(6, np.int64)]
    *_, out, flags, wide = run_opencl(
        opencl, print_function(fn, "opencl"), "extra", [x, y, n, *outs]
    )
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out[0], np.fmod(x, y))  # the sign of the dividend
    erfc = np.vectorize(math.erfc)(x.astype(np.float64))
    np.testing.assert_allclose(out[1], erfc, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(flags, [np.isnan(x), np.isinf(x)])
    np.testing.assert_array_equal(wide, n.view(np.uint32).astype(np.int64))


# -- a hand-written gpu.module on several work-groups -------------------------------------------

GPU_MODULE = """
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "memref.global"() <{sym_name = "tile", type = memref<16xf32, 3>, sym_visibility = "private", initial_value}> : () -> ()
    "memref.global"() <{sym_name = "row", type = memref<8xf32, 3>, sym_visibility = "private", initial_value}> : () -> ()
    "gpu.func"() <{function_type = (memref<8x12xf32, strided<[16, 1], offset: 3>>, memref<12x8xf32>) -> (), kernel}> ({
    ^bb0(%in: memref<8x12xf32, strided<[16, 1], offset: 3>>, %out: memref<12x8xf32>):
      %tile = memref.get_global @tile : memref<16xf32, 3>
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %ty = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
      %bx = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %by = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
      %c4 = arith.constant 4 : index
      %r0 = arith.muli %by, %c4 : index
      %r = arith.addi %r0, %ty : index
      %q0 = arith.muli %bx, %c4 : index
      %q = arith.addi %q0, %tx : index
      %x = memref.load %in[%r, %q] : memref<8x12xf32, strided<[16, 1], offset: 3>>
      %t0 = arith.muli %ty, %c4 : index
      %t = arith.addi %t0, %tx : index
      memref.store %x, %tile[%t] : memref<16xf32, 3>
      "gpu.barrier"() : () -> ()
      %s0 = arith.muli %tx, %c4 : index
      %s = arith.addi %s0, %ty : index
      %y = memref.load %tile[%s] : memref<16xf32, 3>
      %orow = arith.addi %q0, %ty : index
      %ocol = arith.addi %r0, %tx : index
      memref.store %y, %out[%orow, %ocol] : memref<12x8xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "transpose"} : () -> ()
    "gpu.func"() <{function_type = (memref<32xf32>, memref<32xf32>, memref<32xi32>) -> (), kernel}> ({
    ^bb0(%in: memref<32xf32>, %out: memref<32xf32>, %ids: memref<32xi32>):
      %buf = memref.get_global @row : memref<8xf32, 3>
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bd = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %gd = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %base = arith.muli %b, %bd : index
      %i = arith.addi %base, %t : index
      %x = memref.load %in[%i] : memref<32xf32>
      memref.store %x, %buf[%t] : memref<8xf32, 3>
      "gpu.barrier"() : () -> ()
      %c1 = arith.constant 1 : index
      %last = arith.subi %bd, %c1 : index
      %j = arith.subi %last, %t : index
      %y = memref.load %buf[%j] : memref<8xf32, 3>
      memref.store %y, %out[%i] : memref<32xf32>
      %g = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c1000 = arith.constant 1000 : index
      %k = arith.muli %gd, %c1000 : index
      %v = arith.addi %g, %k : index
      %vi = arith.index_cast %v : index to i32
      memref.store %vi, %ids[%i] : memref<32xi32>
      "gpu.return"() : () -> ()
    }) {sym_name = "reverse"} : () -> ()
    "gpu.func"() <{function_type = (memref<12x8xf32>, memref<12x4xf32>, memref<12xf32>, memref<12xi32>, memref<12xf32>) -> (), kernel}> ({
    ^bb0(%x: memref<12x8xf32>, %out: memref<12x4xf32>, %out2: memref<12xf32>, %fib: memref<12xi32>, %swp: memref<12xf32>):
      %r = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %a = vector.load %x[%r, %c0] : memref<12x8xf32>, vector<4xf32>
      %b = vector.load %x[%r, %c4] : memref<12x8xf32>, vector<4xf32>
      %half = arith.constant dense<0.5> : vector<4xf32>
      %f = vector.fma %a, %b, %half : vector<4xf32>
      %gt = "arith.cmpf"(%a, %b) <{predicate = 2 : i64, fastmath = #arith.fastmath<none>}> : (vector<4xf32>, vector<4xf32>) -> vector<4xi1>
      %mx = "arith.select"(%gt, %a, %b) : (vector<4xi1>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
      %e = math.exp %mx : vector<4xf32>
      %sum = vector.reduction <add>, %f : vector<4xf32> into f32
      %big = vector.reduction <maximumf>, %e : vector<4xf32> into f32
      %first = vector.extract %f[0] : f32 from vector<4xf32>
      %w = vector.insert %sum, %e[3] : f32 into vector<4xf32>
      %sc = vector.broadcast %first : f32 to vector<4xf32>
      %w2 = arith.addf %w, %sc : vector<4xf32>
      vector.store %w2, %out[%r, %c0] : memref<12x4xf32>, vector<4xf32>
      %zero = arith.constant 0.0 : f32
      %pos = arith.cmpf ogt, %sum, %zero : f32
      %res = scf.if %pos -> (f32) {
        %th = math.tanh %sum : f32
        scf.yield %th : f32
      } else {
        %two = arith.constant 2.0 : f32
        %d = arith.mulf %sum, %two : f32
        scf.yield %d : f32
      }
      %res2 = arith.addf %res, %big : f32
      memref.store %res2, %out2[%r] : memref<12xf32>
      %n = arith.addi %r, %c3 : index
      %z32 = arith.constant 0 : i32
      %o32 = arith.constant 1 : i32
      %fa, %fb = scf.for %i = %c0 to %n step %c1 iter_args(%p = %z32, %q = %o32) -> (i32, i32) {
        %s = arith.addi %p, %q : i32
        scf.yield %q, %s : i32, i32
      }
      memref.store %fa, %fib[%r] : memref<12xi32>
      %u, %v = scf.for %i = %c0 to %r step %c1 iter_args(%uu = %first, %vv = %sum) -> (f32, f32) {
        scf.yield %vv, %uu : f32, f32
      }
      memref.store %u, %swp[%r] : memref<12xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "rows"} : () -> ()
  }) : () -> ()
}"""


def gpu_module() -> GpuModuleOp:
    module = parse(GPU_MODULE)
    return next(op for op in module.walk() if isinstance(op, GpuModuleOp))


def test_gpu_module_workgroup_buffers_and_barriers(opencl: OpenCL) -> None:
    source = print_module(gpu_module(), "opencl")
    assert "__local float tile[16];" in source and "barrier(" in source
    root = randn(8 * 16 + 3)
    _, out = run_opencl(
        opencl,
        source,
        "transpose",
        [root, np.zeros((12, 8), np.float32)],
        global_size=(12, 8),
        local_size=(4, 4),
        byte_offsets=[40, 0],
    )
    np.testing.assert_array_equal(out, root[3:].reshape(8, 16)[:, :12].T)
    x = randn(32)
    _, out, ids = run_opencl(
        opencl,
        source,
        "reverse",
        [x, np.zeros(32, np.float32), np.zeros(32, np.int32)],
        global_size=(32,),
        local_size=(8,),
    )
    np.testing.assert_array_equal(out, x.reshape(4, 8)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(ids, np.arange(32) + 4000)


def test_gpu_module_vectors_and_control_flow(opencl: OpenCL) -> None:
    x = randn(12, 8)
    outs = [np.zeros((12, 4), np.float32), np.zeros(12, np.float32), np.zeros(12, np.int32)]
    outs.append(np.zeros(12, np.float32))
    _, out, out2, fib, swp = run_opencl(
        opencl,
        print_module(gpu_module(), "opencl"),
        "rows",
        [x, *outs],
        global_size=(12,),
        local_size=(4,),
        byte_offsets=[0, 8, 0, 4, 0],
    )
    a, b = x[:, :4], x[:, 4:]
    f = a * b + np.float32(0.5)
    e = np.exp(np.where(a > b, a, b))
    total = f.sum(axis=1)
    w = e.copy()
    w[:, 3] = total
    np.testing.assert_allclose(out, w + f[:, :1], rtol=1e-5, atol=1e-6)
    res = np.where(total > 0, np.tanh(total), total * 2)
    np.testing.assert_allclose(out2, res + e.max(axis=1), rtol=1e-5, atol=1e-6)
    fibs = [0, 1]
    while len(fibs) < 16:
        fibs.append(fibs[-1] + fibs[-2])
    np.testing.assert_array_equal(fib, fibs[3:15])
    np.testing.assert_allclose(swp, np.where(np.arange(12) % 2, total, f[:, 0]), rtol=1e-5)


def test_gpu_module_as_cuda_compiles(tmp_path: Path) -> None:
    source = print_module(gpu_module(), "cuda")
    assert 'extern "C" __global__ void transpose(float* arg0, float* arg1)' in source
    assert "__shared__ float tile[16];" in source and "__syncthreads();" in source
    nvcc_compiles(source, tmp_path)


LANES = """
func.func @lanes(%x: memref<12xf32>, %n: memref<6xi32>, %y: memref<12xf32>, %m: memref<6xi32>) {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c9 = arith.constant 9 : index
  %a = vector.load %x[%c0] : memref<12xf32>, vector<6xf32>
  %b = vector.load %x[%c6] : memref<12xf32>, vector<6xf32>
  %mn = arith.minimumf %a, %b : vector<6xf32>
  %sq = math.sqrt %mn : vector<6xf32>
  vector.store %sq, %y[%c0] : memref<12xf32>, vector<6xf32>
  %i = vector.load %n[%c0] : memref<6xi32>, vector<6xi32>
  %three = arith.constant dense<-3> : vector<6xi32>
  %d = arith.divsi %i, %three : vector<6xi32>
  %fl = arith.floordivsi %i, %three : vector<6xi32>
  %s = arith.addi %d, %fl : vector<6xi32>
  vector.store %s, %m[%c0] : memref<6xi32>, vector<6xi32>
  %f = "arith.sitofp"(%s) : (vector<6xi32>) -> vector<6xf32>
  %g = vector.reduction <maxsi>, %s : vector<6xi32> into i32
  %gf = arith.sitofp %g : i32 to f32
  %t = vector.load %x[%c6] : memref<12xf32>, vector<3xf32>
  %t1 = vector.load %x[%c9] : memref<12xf32>, vector<1xf32>
  %e1 = vector.extract %t1[0] : f32 from vector<1xf32>
  %u = vector.broadcast %e1 : f32 to vector<3xf32>
  %v = arith.mulf %t, %u : vector<3xf32>
  %w = vector.reduction <mul>, %v, %gf : vector<3xf32> into f32
  %fs = vector.reduction <add>, %f : vector<6xf32> into f32
  %z = arith.addf %w, %fs : f32
  %c11 = arith.constant 11 : index
  memref.store %z, %y[%c11] : memref<12xf32>
  func.return
}"""


def test_odd_vector_widths(opencl: OpenCL) -> None:
    """vector<6> lives in a float8 (OpenCL), vector<3> is native, vector<1> is a scalar; ops with
    no vector form (divsi, floordivsi, sitofp) run lane by lane."""
    source = print_function(first_func(parse(LANES)), "opencl")
    assert "float8" in source and "float3" in source
    x = np.abs(randn(12))
    n = np.array([7, -7, 0, 8, -9, 100], np.int32)
    _, _, y, m = run_opencl(
        opencl, source, "lanes", [x, n, np.zeros(12, np.float32), np.zeros(6, np.int32)]
    )
    a, b = x[:6], x[6:]
    np.testing.assert_allclose(y[:6], np.sqrt(np.minimum(a, b)), rtol=1e-6)
    trunc = np.array([int(v / -3) for v in n])
    s = trunc + np.floor_divide(n, -3)
    np.testing.assert_array_equal(m, s)
    w = np.prod(x[6:9] * x[9]) * s.max()
    np.testing.assert_allclose(y[11], w + s.sum(), rtol=1e-5)
    np.testing.assert_array_equal(y[6:11], 0)


# -- every kernel of real models -----------------------------------------------------------------


def model_kernels(name: str, width: int = 0) -> tuple[ModuleOp, list[func.FuncOp]]:
    """A zoo model lowered to loop level: the module and its kernel functions (not @main). With
    a width, every kernel (fills too) is scheduled for vectors of that many lanes."""
    module = import_model(getattr(zoo, name)())
    if not width:
        lower(module, "loops")
    else:
        lower(module, "buffers")
        for fill in [op for op in module.walk() if isinstance(op, linalg.FillOp)]:
            generic = fill_to_generic(fill)
            fill.parent_block().insert_op_before(generic, fill)  # type: ignore[union-attr]
            fill.detach()
            fill.erase()
        lower(module, "loops", schedules=[f"default-schedule{{width={width}}}"], start="buffers")
    kernels = [
        op
        for op in module.body.block.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data != "main"
    ]
    return module, kernels


def extent(t: MemRefType) -> int:
    """Elements of the root buffer an argument of type t addresses."""
    strides = t.get_strides()
    offset = t.get_offset() or 0
    return offset + sum((n - 1) * s for n, s in zip(t.get_shape(), strides)) + 1  # type: ignore[operator]


@pytest.mark.parametrize("model", ["small_cnn", "transformer_block"])
def test_model_kernels_match_the_cpu_backend(opencl: OpenCL, model: str) -> None:
    """Every kernel of the model, printed as OpenCL and run as one work-item, leaves the same
    buffers as the LLVM CPU back end's code for it (random contents in every argument)."""
    module, kernels = model_kernels(model)
    source = "\n".join(print_function(fn, "opencl") for fn in kernels)
    cpu = module.clone()
    for op in list(cpu.body.block.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            op.detach()
            op.erase()
        elif isinstance(op, func.FuncOp):
            op.sym_visibility = None
    run_passes(make_context(), cpu, list(LEVELS["llvm-dialect"]))
    program = compile_module(cpu)
    for fn in kernels:
        types = [arg.type for arg in fn.body.blocks[0].args]
        assert all(isinstance(t, MemRefType) for t in types)
        arrays = [randn(extent(t)) for t in types]  # type: ignore[arg-type]
        expected = [a.copy() for a in arrays]
        program.function(fn.sym_name.data)(*expected)
        got = run_opencl(opencl, source, fn.sym_name.data, arrays)
        for k, (g, e) in enumerate(zip(got, expected)):
            np.testing.assert_allclose(
                g, e, rtol=1e-5, atol=1e-5, equal_nan=True, err_msg=f"{fn.sym_name.data} arg {k}"
            )


@pytest.mark.parametrize("model", ["small_cnn", "transformer_block"])
def test_model_kernels_compile_for_both_flavours(
    request: pytest.FixtureRequest, tmp_path: Path, model: str
) -> None:
    """Scheduled for 4 lanes (CUDA's widest vector type), every kernel prints in both flavours;
    PoCL builds the OpenCL text (when there is OpenCL) and nvcc the CUDA text."""
    _, kernels = model_kernels(model, width=4)
    texts = {fl: "\n".join(print_function(fn, fl) for fn in kernels) for fl in FLAVOURS}
    assert texts["cuda"].count('extern "C" __global__ void') == len(kernels)
    try:
        opencl: OpenCL | None = request.getfixturevalue("opencl")
    except pytest.skip.Exception:
        opencl = None
    if opencl is not None:
        opencl.build(texts["opencl"])
    nvcc_compiles(texts["cuda"], tmp_path)


# -- errors --------------------------------------------------------------------------------------


def test_scf_parallel_is_refused() -> None:
    fn = loop_kernel(matmul_src(64, 5, 64), ["tile{sizes=16,16,0}", "parallelize{loops=1}"], "par")
    with pytest.raises(PrintError, match=r"'scf.parallel' in function @par.*parallel = 0"):
        print_function(fn, "opencl")


def test_unknown_op_is_refused() -> None:
    ctx = Context(allow_unregistered=True)
    for dialect in (Builtin, MemRef, Arith, Func):
        ctx.load_dialect(dialect)
    src = """
func.func @odd(%x: memref<4xf32>) {
  "test.frobnicate"(%x) : (memref<4xf32>) -> ()
  func.return
}"""
    fn = first_func(Parser(ctx, src).parse_module())
    for flavour in FLAVOURS:
        with pytest.raises(PrintError, match=r"'test.frobnicate' in function @odd"):
            print_function(fn, flavour)


WIDE = """
func.func @wide(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<8xf32>, vector<8xf32>
  %w = arith.addf %v, %v : vector<8xf32>
  vector.store %w, %x[%c0] : memref<8xf32>, vector<8xf32>
  func.return
}"""


def test_wide_cuda_vectors_are_refused() -> None:
    fn = first_func(parse(WIDE))
    with pytest.raises(PrintError, match=r"'vector.load' in function @wide.*at most 4 lanes"):
        print_function(fn, "cuda")
    assert "float8 v0 = vload8(0, arg0);" in print_function(fn, "opencl")


def test_unprintable_functions_are_refused() -> None:
    scalar_arg = "func.func @k(%x: f32) {\n  func.return\n}"
    with pytest.raises(PrintError, match=r"@k.*argument 0.*memrefs"):
        print_function(first_func(parse(scalar_arg)), "opencl")
    keyword = "func.func @kernel(%x: memref<4xf32>) {\n  func.return\n}"
    with pytest.raises(PrintError, match=r"'kernel' is not a usable opencl function name"):
        print_function(first_func(parse(keyword)), "opencl")
    with pytest.raises(PrintError, match=r"unknown C flavour 'metal'"):
        print_function(first_func(parse(keyword)), "metal")
    with pytest.raises(PrintError, match=r"takes a gpu.module"):
        print_module(parse(keyword), "cuda")
    dynamic = "func.func @dyn(%x: memref<?xf32>) {\n  func.return\n}"
    with pytest.raises(PrintError, match=r"@dyn.*dynamic shape"):
        print_function(first_func(parse(dynamic)), "cuda")
