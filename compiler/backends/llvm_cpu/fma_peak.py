"""This core's measured FMA peak: the FLOP/s a kernel could reach if it did nothing but FMAs.

A profile's GFLOP/s means little without the ceiling beside it (a product at 110 GFLOP/s is
near the top on one core and far from it on another), and the ceiling differs between machines
(Zen 4 splits a 512-bit FMA over two 256-bit pipes, Zen 5 does not; the boost clock varies by
part and by load). So it is measured, not taken from a table: a JIT-ed loop of CHAINS
independent multiply-add chains on the host's widest f32 vectors, enough of them to cover the
FMA latency on every pipe, timed on one thread (best of a few runs; a busy machine can only
lower it).
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable

import llvmlite.binding as llvm

from compiler.backends.llvm_cpu import jit
from passes.schedule.cpu_target import host_cpu

CHAINS = 16
"""Independent accumulators: above latency (4-5 cycles) x FMA pipes (2) on every x86 core we
target, and at most the 16 vector registers of AVX2 (AVX-512 has 32)."""


def _kernel_ir(width: int) -> str:
    """`void zrt_fma_peak(i64 n, float a, float b, float* out)`: CHAINS vectors of `width` f32
    lanes each step `acc = fma(acc, a, b)` n times, then are summed into out[0..width)."""
    vec = f"<{width} x float>"
    lines = [
        f'target triple = "{llvm.get_process_triple()}"',
        f"declare {vec} @llvm.fma.v{width}f32({vec}, {vec}, {vec})",
        "define void @zrt_fma_peak(i64 %n, float %a, float %b, ptr %out) {",
        "entry:",
        f"  %a0 = insertelement {vec} poison, float %a, i64 0",
        f"  %va = shufflevector {vec} %a0, {vec} poison, <{width} x i32> zeroinitializer",
        f"  %b0 = insertelement {vec} poison, float %b, i64 0",
        f"  %vb = shufflevector {vec} %b0, {vec} poison, <{width} x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i.next, %loop]",
    ]
    for k in range(CHAINS):
        lines.append(f"  %acc{k} = phi {vec} [%vb, %entry], [%next{k}, %loop]")
    for k in range(CHAINS):
        lines.append(
            f"  %next{k} = call {vec} @llvm.fma.v{width}f32({vec} %acc{k}, {vec} %va, {vec} %vb)"
        )
    lines += [
        "  %i.next = add i64 %i, 1",
        "  %more = icmp ult i64 %i.next, %n",
        "  br i1 %more, label %loop, label %done",
        "done:",
    ]
    total = "%next0"
    for k in range(1, CHAINS):
        lines.append(f"  %sum{k} = fadd {vec} {total}, %next{k}")
        total = f"%sum{k}"
    lines += [f"  store {vec} {total}, ptr %out, align 4", "  ret void", "}"]
    return "\n".join(lines) + "\n"


@functools.cache
def _kernel(width: int) -> tuple[llvm.ExecutionEngine, Callable[..., None]]:
    mod = jit.parse(_kernel_ir(width))
    tm = jit.target_machine()
    jit.optimize(mod, tm, unroll=False)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(
        None, ctypes.c_int64, ctypes.c_float, ctypes.c_float, ctypes.POINTER(ctypes.c_float)
    )
    return engine, proto(engine.get_function_address("zrt_fma_peak"))


@functools.cache
def fma_peak_flops(window_s: float = 0.02, runs: int = 5) -> float:
    """FLOP/s of one thread doing only f32 FMAs on the host's widest vectors (2 FLOPs each):
    the best of `runs` timed loops of about `window_s` each."""
    width = host_cpu().width
    _, fn = _kernel(width)
    out = (ctypes.c_float * width)()
    steps = 1 << 14
    while True:  # grow the loop until one call takes a measurable time
        start = time.perf_counter()
        fn(steps, 0.999, 1e-3, out)
        spent = time.perf_counter() - start
        if spent >= window_s / 4 or steps >= 1 << 34:
            break
        steps *= 4
    steps = max(1, int(steps * window_s / max(spent, 1e-9)))
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn(steps, 0.999, 1e-3, out)
        best = min(best, time.perf_counter() - start)
    return steps * CHAINS * width * 2 / best
