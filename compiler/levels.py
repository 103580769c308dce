"""The compilation levels, their passes and the layouts a compilation can ask for, as plain data.

Kept apart from compiler/pipelines.py (which parses pipelines with xDSL) so that the command line
can build its parser, and `ziggurat run X.zpkg` can run a package, without importing xDSL.
"""

from __future__ import annotations

IMPORTED = "imported"
"""The level of a freshly imported model: graph ops, before the graph-level optimizations."""

LEVELS: dict[str, tuple[str, ...]] = {
    # graph-level optimization: folding first, then fusion
    "graph": (
        "simplify",
        "fold-batchnorm",
        "fold-constants",
        "transpose-weights",
        "pad-weights",
        "pack-weights",
        "simplify",
        "blocked-layout",
        "winograd",
        "fuse-ops",
    ),
    "tensor": ("convert-graph-to-linalg", "fold-transposes", "fuse-elementwise"),
    # one planned arena; each fused group outlined as a kernel function (a tuning task)
    "buffers": ("bufferize", "outline-kernels"),
    # schedules (tuned ones are applied before this level; default-schedule fills the rest)
    "loops": ("default-schedule", "convert-linalg-to-loops"),
    "llvm-dialect": (
        # memrefs with `?` dims: sizes as arguments, accesses through their root buffer
        "resolve-dynamic-memrefs",
        "convert-parallel-to-runtime",
        "convert-scf-to-cf",
        "convert-vector-to-llvm",
        "convert-memref-to-llvm",
        "convert-math-to-llvm",
        "convert-arith-to-llvm",
        "convert-index-to-llvm",
        "convert-cf-to-llvm",
        "convert-func-to-llvm",
        "reconcile-unrealized-casts",
    ),
}

ORDER: tuple[str, ...] = (IMPORTED, *LEVELS)

LAYOUT_PASS = "blocked-layout"
LAYOUTS = ("auto", "NCHW", "NCHW4c", "NCHW8c", "NCHW16c")
"""The data layouts of convolutions a compilation can ask for: `auto` is NCHW[b]c with the
CPU's vector width as b (the CPU default), `NCHW` leaves convolutions as imported (what the
GPU path uses: its schedules map threads onto image rows)."""

GPU_LEVEL = "gpu"
"""The GPU sibling of `loops` (it follows `buffers`): kernels as gpu.module kernels with block and
thread ids, @main's calls as gpu.launch_func. The printers of compiler/backends/gpu take it from
there; its passes depend on the target preset (passes/schedule/gpu_target.py)."""
