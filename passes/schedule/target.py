"""What the machine and the runtime offer a schedule: vector lanes and threads."""

from __future__ import annotations

import functools

MAX_THREADS = 1024
"""The most threads the thread-pool runtime runs (MAX_THREADS in compiler/parallel_runtime.c)."""


@functools.cache
def host_vector_width() -> int:
    """f32 lanes of the widest vector unit of this CPU (16 with AVX-512, 8 with AVX2)."""
    try:
        # imported on first use: loading LLVM is slow, and only a width of 0 ("the host's") needs it
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        if features.get("avx512f", False):
            return 16
        if features.get("avx2", False) or features.get("avx", False):
            return 8
    except Exception:  # pragma: no cover - llvmlite always reports on x86
        pass
    return 4
