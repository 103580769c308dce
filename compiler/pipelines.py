"""Named pipelines: ordinary `-p` strings under a name, usable in `-p` like a pass.

`ziggurat-opt -p cpu-default` expands to the string below; names may nest (a pipeline may
name another pipeline). Keep entries as plain strings so they can be logged and replayed.
"""

from __future__ import annotations

from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

LEVEL_PASSES: dict[str, list[str]] = {
    # graph-level optimization, after import (issue 3): folding first, then fusion
    "graph": ["simplify", "fold-batchnorm", "fold-constants", "simplify", "fuse-ops"],
    # each level's passes, from the one above (levels: graph -> tensor -> loops -> llvm-dialect);
    # `ziggurat compile --emit LEVEL` and compiler/model.py stop after a level
    "tensor": ["convert-graph-to-linalg"],
    "loops": ["bufferize", "outline-kernels", "default-schedule", "convert-linalg-to-loops"],
    "llvm-dialect": [
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
    ],
}

PIPELINES: dict[str, str] = {
    # graph -> tensor -> buffers -> loops -> llvm (then compiler/backends/llvm_cpu.py)
    "cpu-default": ",".join(p for level in LEVEL_PASSES.values() for p in level),
    # Cleanups that every level tolerates; handy after a hand-written transform.
    "cleanup": "canonicalize,cse,dce",
}


class PipelineError(ValueError):
    """A named pipeline that cannot be expanded (options given, or a cycle)."""


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
