"""Not a unit test: GFLOP/s of the register-blocked LOOP-level matmul through the LLVM backend.

Run: python tests/bench/bench_llvm_matmul.py [size ...]  (single thread; compare with numpy).
"""

from __future__ import annotations

import sys
from pathlib import Path

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.support

import numpy as np  # noqa: E402

from compiler.backends.llvm_cpu.compile import compile_module  # noqa: E402
from compiler.runtime import aligned_copy, aligned_empty, time_call  # noqa: E402
from tests.support.llvm_kernels import lower, matmul_mlir  # noqa: E402


def bench(n: int) -> None:
    prog = compile_module(lower(matmul_mlir(n, n, n)))
    rng = np.random.default_rng(0)
    a = aligned_copy(rng.standard_normal((n, n), dtype=np.float32))
    b = aligned_copy(rng.standard_normal((n, n), dtype=np.float32))
    c = aligned_empty((n, n))
    f = prog.function("matmul")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    number = max(1, int(2e8 // (2 * n**3)))
    ours = time_call(lambda: f(a, b, c), repeat=7, number=number)
    ref = time_call(lambda: np.matmul(a, b, out=c), repeat=7, number=number)
    asm = prog.asm
    fmas = sum(
        1 for line in asm.splitlines() if "vfmadd" in line and ("zmm" in line or "ymm" in line)
    )
    flop = 2 * n**3
    print(
        f"n={n:5d}  ziggurat {flop / ours / 1e9:6.1f} GFLOP/s   numpy {flop / ref / 1e9:6.1f} GFLOP/s"
        f"   ratio {ref / ours:5.2f}   vector FMAs in asm: {fmas}   compile {prog.compile_time_s * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    print(
        f"cpu: {bench_env.cpu_description()}; numpy/OpenBLAS on 1 thread, OPENBLAS_CORETYPE unset"
    )
    for size in [int(s) for s in sys.argv[1:]] or [64, 128, 256]:
        bench(size)
