"""The CPU's cycle counter as generated code reads it (`llvm.readcyclecounter`), and its rate.

The kernel profiler (passes/transforms/profile_kernels.py) counts in these units; turning them
into seconds needs the counter's frequency, measured here once per process against
`time.perf_counter` by a tiny JIT-ed function that reads the same counter. On x86 it is the
time-stamp counter, which runs at a constant rate whatever the core's clock does.
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable

import llvmlite.binding as llvm

from compiler.backends.llvm_cpu import jit

_READER = """
declare i64 @llvm.readcyclecounter()
define i64 @zrt_read_cycles() {
  %t = call i64 @llvm.readcyclecounter()
  ret i64 %t
}
"""


class NoCycleCounterError(RuntimeError):
    """This CPU has no cycle counter that LLVM's readcyclecounter reads (it returns 0)."""


@functools.cache
def _reader() -> tuple[llvm.ExecutionEngine, Callable[[], int]]:
    mod = jit.parse(
        f'target triple = "{llvm.get_process_triple()}"\n' + _READER.replace("\n\n", "\n")
    )
    engine = llvm.create_mcjit_compiler(mod, jit.target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_int64)(engine.get_function_address("zrt_read_cycles"))
    return engine, fn


def read_cycles() -> int:
    """The counter now."""
    return int(_reader()[1]())


@functools.cache
def cycles_per_second(window_s: float = 0.05) -> float:
    """The counter's rate, from a `window_s` busy wait timed by both clocks (best of three)."""
    rates = []
    for _ in range(3):
        c0, t0 = read_cycles(), time.perf_counter()
        while time.perf_counter() - t0 < window_s:
            pass
        c1, t1 = read_cycles(), time.perf_counter()
        rates.append((c1 - c0) / (t1 - t0))
    rate = sorted(rates)[1]
    if rate <= 0:
        raise NoCycleCounterError(
            "this CPU's cycle counter reads 0 (llvm.readcyclecounter is not supported here), "
            "so kernels cannot be profiled"
        )
    return rate
