"""The levels of the compiler and the pipelines between them, composed by name.

Each level is the list of passes that produce it from the level above, in the order of the
README's table (graph -> tensor -> buffers -> loops -> llvm-dialect). Everything that lowers IR
(the model API, the kernel compiler, the tuner's builder, `ziggurat compile --emit LEVEL`) asks
for the passes between two levels by name, so adding a pass to a level changes all of them.
Entries are plain `-p` strings so they can be logged and replayed with `ziggurat-opt -p`.
"""

from __future__ import annotations

from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

from compiler.levels import (  # re-exported: the levels are named here for every caller
    GPU_LEVEL,
    IMPORTED,
    LAYOUT_PASS,
    LAYOUTS,
    LEVELS,
    ORDER,
)
from dialects.graph_shapes import layout_block

__all__ = ["GPU_LEVEL", "IMPORTED", "LAYOUT_PASS", "LAYOUTS", "LEVELS", "ORDER"]


class PipelineError(ValueError):
    """An unknown level, levels out of order, or a named pipeline that cannot be expanded."""


def layout_passes(layout: str) -> list[str]:
    """What stands for `blocked-layout` in the graph level for the layout `layout`."""
    if layout not in LAYOUTS:
        raise PipelineError(f"unknown layout '{layout}' (layouts: {', '.join(LAYOUTS)})")
    if layout == "NCHW":
        return []
    return [LAYOUT_PASS if layout == "auto" else f"{LAYOUT_PASS}{{block={layout_block(layout)}}}"]


DEFAULT_GPU_TARGET = "opencl-cpu"
"""The preset `ziggurat-opt -p to-gpu` uses: the OpenCL device every CI machine has (PoCL)."""


def gpu_passes(target: str) -> list[str]:
    """The passes that produce the gpu level for `target` from the buffers level."""
    return [f"default-schedule{{target={target}}}", f"convert-linalg-to-gpu{{target={target}}}"]


def _position(level: str) -> int:
    if level not in ORDER:
        raise PipelineError(f"unknown level '{level}' (levels: {', '.join(ORDER)})")
    return ORDER.index(level)


def levels_between(start: str, stop: str) -> list[str]:
    """The levels after `start` up to and including `stop`, in order."""
    lo, hi = _position(start), _position(stop)
    if hi < lo:
        raise PipelineError(f"level '{stop}' comes before level '{start}'")
    return list(ORDER[lo + 1 : hi + 1])


def lowering(start: str, stop: str) -> list[str]:
    """The passes that lower a module at level `start` to level `stop`."""
    return [p for level in levels_between(start, stop) for p in LEVELS[level]]


PIPELINES: dict[str, str] = {
    # graph -> tensor -> buffers -> loops -> llvm-dialect (then compiler/backends/llvm_cpu)
    "cpu-default": ",".join(lowering(IMPORTED, "llvm-dialect")),
    # every level as its own pipeline: `-p buffers` lowers a tensor-level module to buffers
    **{f"to-{level}": ",".join(passes) for level, passes in LEVELS.items()},
    # buffers -> gpu (then compiler/backends/gpu prints OpenCL C or CUDA C)
    "to-gpu": ",".join(gpu_passes(DEFAULT_GPU_TARGET)),
    # Cleanups that every level tolerates; handy after a hand-written transform.
    "cleanup": "canonicalize,cse,dce",
}


def expand(spec: str, pipelines: dict[str, str] | None = None) -> list[ArgSpec]:
    """Parse a `-p` string and replace named pipelines by their passes, recursively."""
    table = PIPELINES if pipelines is None else pipelines
    out: list[ArgSpec] = []

    def visit(text: str, stack: tuple[str, ...]) -> None:
        for arg in parse_pipeline(text):
            if arg.name not in table:
                out.append(arg)
                continue
            if arg.parameters:
                raise PipelineError(f"named pipeline '{arg.name}' takes no options")
            if arg.name in stack:
                cycle = " -> ".join((*stack, arg.name))
                raise PipelineError(f"named pipeline cycle: {cycle}")
            visit(table[arg.name], (*stack, arg.name))

    visit(spec, ())
    return out
