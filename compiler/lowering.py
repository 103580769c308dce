"""The levels, run: `lower` takes a module down the pass lists one level at a time, and
`lower_to_gpu` to the gpu level for a GPU preset. compiler/model.py re-exports both (the model
API); the back ends (compiler/backends/) call them to reach their last IR level.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import (
    GPU_LEVEL,
    IMPORTED,
    LAYOUT_PASS,
    LEVELS,
    gpu_passes,
    layout_passes,
    levels_between,
)


def level_passes(
    level: str,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    layout: str = "auto",
) -> list[str | ModulePass]:
    """The passes that produce `level` from the one above. At the graph level, `layout` picks
    the convolutions' data layout (compiler/pipelines.py LAYOUTS). At the loops level, the
    `schedules` passes (tuned records, hand-written schedule edits) run first and
    `default-schedule` then fills in the kernels they left unscheduled, parallelizing for
    `threads`."""
    if level != "loops":
        layouts = layout_passes(layout)
        return [q for p in LEVELS[level] for q in (layouts if p == LAYOUT_PASS else [p])]
    default = "default-schedule" if threads <= 1 else f"default-schedule{{threads={threads}}}"
    return [*schedules, *(default if p == "default-schedule" else p for p in LEVELS[level])]


def lower(
    module: ModuleOp,
    level: str,
    ctx: Context | None = None,
    timings: dict[str, float] | None = None,
    optimize: bool = True,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    start: str = IMPORTED,
    layout: str = "auto",
) -> ModuleOp:
    """Lower a module in place from level `start` (a fresh import by default) down to `level`.

    With `optimize`, the graph-level passes (folding, simplification, layout, fusion) run.
    `schedules`, `threads` and `layout`: see level_passes.
    """
    ctx = ctx or make_context()
    for lvl in levels_between(start, level):
        if lvl == "graph" and not optimize:
            continue
        t0 = time.perf_counter()
        run_passes(ctx, module, level_passes(lvl, schedules, threads, layout))
        if timings is not None:
            timings[lvl] = time.perf_counter() - t0
    return module


def lower_to_gpu(
    module: ModuleOp,
    preset: str,
    ctx: Context | None = None,
    timings: dict[str, float] | None = None,
    optimize: bool = True,
    start: str = IMPORTED,
    schedules: Sequence[str | ModulePass] = (),
) -> ModuleOp:
    """Lower a module in place down to the gpu level, its kernels scheduled for `preset`
    (a GPU target of passes/schedule/gpu_target.py); the `schedules` passes (tuned records for
    that preset, hand-written edits) run first, as at the loops level."""
    ctx = ctx or make_context()
    lower(module, "buffers", ctx, timings, optimize=optimize, start=start, layout="NCHW")
    t0 = time.perf_counter()
    run_passes(ctx, module, [*schedules, *gpu_passes(preset)])
    if timings is not None:
        timings[GPU_LEVEL] = time.perf_counter() - t0
    return module
