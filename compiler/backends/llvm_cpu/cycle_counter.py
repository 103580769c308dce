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


def _tight_read(tries: int = 100, slack_s: float = 20e-6) -> tuple[float, int, float]:
    """A bracketed read whose clock reads are at most `slack_s` apart (the tightest of `tries`
    if none is)."""
    best = _bracketed_read()
    for _ in range(tries):
        if best[2] - best[0] <= slack_s:
            break
        read = _bracketed_read()
        if read[2] - read[0] < best[2] - best[0]:
            best = read
    return best


def _bracketed_read() -> tuple[float, int, float]:
    """The counter read between two clock reads: (clock before, counter, clock after). The gap
    between the two clock reads bounds how far a preemption can have moved them apart."""
    before = time.perf_counter()
    cycles = read_cycles()
    return before, cycles, time.perf_counter()


@functools.cache
def cycles_per_second(window_s: float = 0.05) -> float:
    """The counter's rate, from a `window_s` busy wait timed by both clocks (median of three).

    Each end reads the counter between two clock reads and is retried while the two are far
    apart (the process was preempted there), so a busy host skews the rate by at most the
    tight bracket over the window, not by a scheduler time slice."""
    rates = []
    for _ in range(3):
        start = _tight_read()
        while time.perf_counter() - start[0] < window_s:
            pass
        end = _tight_read()
        rates.append((end[1] - start[1]) / ((end[0] + end[2]) / 2 - (start[0] + start[2]) / 2))
    rate = sorted(rates)[1]
    if rate <= 0:
        raise NoCycleCounterError(
            "this CPU's cycle counter reads 0 (llvm.readcyclecounter is not supported here), "
            "so kernels cannot be profiled"
        )
    return rate
