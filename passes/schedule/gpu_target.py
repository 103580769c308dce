"""What a GPU (or an OpenCL device) offers a schedule: threads, workgroup memory, vector widths.

A schedule for a GPU is checked against one of these (passes/schedule/gpu_rules.py) and the
default GPU schedule is derived from it (gpu_default.py). Presets describe the device kinds the
back ends target; a runtime that can query its device checks the real limits again at load time
(compiler/backends/gpu/), so a preset may only be optimistic about speed, never about limits.
"""

from __future__ import annotations

from dataclasses import dataclass

from passes.schedule.target import host_vector_width


@dataclass(frozen=True)
class GpuTarget:
    """One kind of device, as a schedule sees it."""

    name: str
    api: str
    """"cuda" or "opencl": which C flavour and runtime the kernels are for."""
    max_threads: int
    """Threads (work-items) per block (work-group)."""
    shared_bytes: int
    """Workgroup (shared / __local) memory per block that static buffers may use."""
    vector_widths: tuple[int, ...]
    """Element counts a vector access may have (1 = scalar)."""
    max_accumulators: int
    """Register-tile elements per thread before registers spill (the legality bound)."""
    cpu_like: bool
    """A CPU device (PoCL): one work-item per register tile with wide vectors, few work-items per
    group, no workgroup staging (it is plain memory there); otherwise SIMT: hundreds of threads
    per block sharing operand tiles staged in workgroup memory."""
    threads_per_block: int
    """What the default schedule aims for."""
    resident_threads: int = 0
    """Threads the device keeps in flight (multiprocessors x resident threads each); a kernel
    with far fewer outputs gets its reductions split across threads by default (0: never)."""


def _opencl_cpu() -> GpuTarget:
    width = host_vector_width()  # PoCL compiles for this host
    return GpuTarget(
        "opencl-cpu",
        "opencl",
        max_threads=4096,
        shared_bytes=512 * 1024,
        vector_widths=tuple(w for w in (1, 2, 4, 8, 16) if w <= width),
        max_accumulators=16 * width,
        cpu_like=True,
        threads_per_block=4,
    )


def _simt(name: str, api: str) -> GpuTarget:
    # NVIDIA since Volta: 1024 threads per block, 48 KiB of static shared memory per block
    # (more needs a dynamic opt-in), 255 registers per thread; resident threads: a mid-size GPU
    # (64 multiprocessors x 1024), so only clearly starved kernels are split by default
    return GpuTarget(
        name,
        api,
        max_threads=1024,
        shared_bytes=48 * 1024,
        vector_widths=(1, 2, 4),
        max_accumulators=64,
        cpu_like=False,
        threads_per_block=256,
        resident_threads=64 * 1024,
    )


PRESETS = {
    "opencl-cpu": _opencl_cpu,
    "opencl-gpu": lambda: _simt("opencl-gpu", "opencl"),
    "cuda": lambda: _simt("cuda", "cuda"),
}
"""Target name -> description (built on use: opencl-cpu reads the host's vector width)."""


def gpu_target(name: str) -> GpuTarget:
    """The preset called `name`; ValueError naming the choices otherwise."""
    if name not in PRESETS:
        raise ValueError(f"unknown GPU target '{name}' (known: {', '.join(PRESETS)})")
    return PRESETS[name]()
