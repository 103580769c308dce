"""The Python API: compile an ONNX model through the levels and run it on numpy arrays.

    model = compile_model("resnet.onnx")          # or an onnx.ModelProto
    outputs = model.run({"input": x})             # dict name -> np.ndarray

`lower(module, level)` runs the same pass lists one level at a time; `ziggurat compile --emit`
and the tests use it, so every level printed is exactly what the compiler runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from compiler.backends.base import CompileOptions
from compiler.backends.llvm_cpu.compile import compile_module as compile_llvm
from compiler.backends.registry import BACKENDS, backend
from compiler.errors import CompileError
from compiler.frontend.onnx import import_onnx
from compiler.host_model import HostModel
from compiler.lowering import level_passes, lower, lower_to_gpu
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS, layout_passes
from compiler.tensor_spec import TensorSpec, check_inputs
from dialects.attributes import (
    DTYPE_ATTR,
    INDEX_CHECK_ATTR,
    INDEX_EXTENT_ATTR,
    LENGTH_OF_ATTR,
    MEMORY_PLAN_ATTR,
    NAME_ATTR,
    RUN_TIME_AXIS_ATTR,
)
from dialects.dense import numpy_dtype
from passes.analysis.main_function import main_function

TARGETS = tuple(BACKENDS)
"""Where a model can run: this CPU (LLVM through llvmlite), an OpenCL device, a CUDA GPU
(compiler/backends/registry.py)."""

LEVEL_NAMES = tuple(LEVELS)
"""IR levels in lowering order; `llvm-ir` and `asm` come from the backend after the last one."""

MODULE_NOTES_PREFIX = "ziggurat."
"""Module attributes that passes leave for the user (memory plan, autotune statistics)."""


def import_model(
    model: str | Path | Any, input_shapes: Mapping[str, list[int]] | None = None
) -> ModuleOp:
    return import_onnx(model, dict(input_shapes) if input_shapes else None)


def _signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Input and output specs of @main at the graph or tensor level (names from ziggurat.name)."""
    main = main_function(module)
    assert main is not None, "the module has no @main"
    ftype = main.function_type

    def attr_of(attrs, i: int, key: str) -> str | int | None:
        if attrs is not None:
            a = attrs.data[i].data.get(key)
            if isinstance(a, StringAttr):
                return a.data
            if isinstance(a, IntegerAttr):
                return a.value.data
        return None

    def spec(t, attrs, i: int, default: str) -> TensorSpec:
        name = str(attr_of(attrs, i, NAME_ATTR) or default)
        compute = numpy_dtype(t.element_type)
        declared = attr_of(attrs, i, DTYPE_ATTR)
        axis, length_of = attr_of(attrs, i, RUN_TIME_AXIS_ATTR), attr_of(attrs, i, LENGTH_OF_ATTR)
        check, extent = attr_of(attrs, i, INDEX_CHECK_ATTR), attr_of(attrs, i, INDEX_EXTENT_ATTR)
        return TensorSpec(
            name,
            tuple(t.get_shape()),
            compute if declared is None else np.dtype(str(declared)),
            None if declared is None else compute,
            None if axis is None else int(axis),
            None if length_of is None else str(length_of),
            None if check is None else str(check),
            None if extent is None else int(extent),
        )

    ins = [spec(t, main.arg_attrs, i, f"arg{i}") for i, t in enumerate(ftype.inputs.data)]
    outs = [spec(t, main.res_attrs, i, f"result{i}") for i, t in enumerate(ftype.outputs.data)]
    return ins, outs


class _Unloaded:
    """The program of a model compiled with `load=False`: saving works, running says why not."""

    parallel = False

    def __init__(self, target: str) -> None:
        self.target = target

    def function(self, name: str) -> Any:
        raise CompileError(
            f"this model was compiled for {self.target} without loading it (load=False): save "
            "it as a package and load that where the device is"
        )

    def close(self) -> None:
        pass


@dataclass
class CompiledModel(HostModel):
    """A model compiled for a target (machine code for the CPU, kernels and a launch plan for
    a GPU); `run` maps input arrays to output arrays."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    timings: dict[str, float] = field(default_factory=dict)
    threads: int = 1
    """Threads of the parallel-for runtime while this model runs (kernels with parallel loops)."""
    notes: dict[str, Attribute] = field(default_factory=dict)
    """The `ziggurat.*` module attributes that passes left (memory plan, autotune statistics)."""
    options: dict[str, Any] = field(default_factory=dict)
    """How it was compiled (threads, layout, optimize, schedules as pass strings; a GPU's
    preset): what a package's manifest records."""
    target: str = "cpu"
    """The backend it was compiled by (compiler/backends/registry.py)."""
    artifact: Any = None
    """What the backend emitted, which a package saves (compiler/backends/base.py)."""

    def save(self, path: str | Path) -> None:
        """Write this model as a self-contained package (compiler/package/: machine code or
        kernels, weights, manifest), loadable by `compiler.package.load_package` without the
        compiler."""
        from compiler.package.writer import save_package

        save_package(self, path)


def compile_module(
    module: ModuleOp,
    ctx: Context | None = None,
    optimize: bool = False,
    jobs: int | None = None,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    target: str = "cpu",
    preset: str | None = None,
    layout: str = "auto",
    load: bool = True,
) -> CompiledModel:
    """Compile a graph-level module to a runnable CompiledModel (as it is, unless `optimize`).

    Kernels are lowered and compiled by `jobs` worker processes (default: one per core); the
    model runs its parallel loops on `threads` threads. `schedules` and `layout` (the CPU's
    only; a GPU's convolutions stay NCHW): see level_passes. `preset`: see compile_model.
    With `load=False` a GPU model is compiled but not loaded (no device needed): it can be
    saved as a package, not run.
    """
    if threads < 1:
        raise CompileError(f"threads must be at least 1 (got {threads})")
    try:
        layout_passes(layout)
    except ValueError as e:
        raise CompileError(str(e)) from None
    chosen = backend(target)
    if chosen.layouts is not None and layout not in chosen.layouts:
        raise CompileError(f"layout {layout} is for the CPU; {target} kernels read NCHW")
    if load:
        chosen.check_available()
    ctx = ctx or make_context()
    timings: dict[str, float] = {}
    ins, outs = _signature(module)
    preset = chosen.resolve_preset(preset)
    compile_options = CompileOptions(optimize, schedules, threads, layout, preset, jobs)
    chosen.lower(module, ctx, timings, compile_options)
    notes = {k: v for k, v in module.attributes.items() if k.startswith(MODULE_NOTES_PREFIX)}
    t0 = time.perf_counter()
    artifact = chosen.emit(module, ctx, len(ins), compile_options)
    program = chosen.load(artifact, threads) if load else _Unloaded(target)
    timings["llvm+machine-code" if target == "cpu" else f"{target}-build"] = (
        time.perf_counter() - t0
    )
    options: dict[str, Any] = {
        "threads": threads,
        "layout": layout,
        "optimize": optimize,
        "schedules": [str(s) for s in schedules],  # a ModulePass prints as its `-p` string
    }
    if preset is not None:
        options["preset"] = preset
    threads = threads if chosen.threaded else 1
    return CompiledModel(ins, outs, program, timings, threads, notes, options, target, artifact)


def compile_model(
    model: str | Path | Any,
    input_shapes: Mapping[str, list[int]] | None = None,
    target: str = "cpu",
    optimize: bool = True,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    preset: str | None = None,
    layout: str = "auto",
    load: bool = True,
    feeds: Mapping[str, Any] | None = None,
) -> CompiledModel:
    """Import an ONNX model (path or ModelProto) and compile it for `target`: "cpu", "opencl"
    or "cuda".

    `layout`: the convolutions' data layout on the CPU (compiler/pipelines.py LAYOUTS: `auto`
    is NCHW[b]c with the vector width as b, `NCHW` keeps the imported layout).

    `preset`: for a GPU target, the device kind the kernels are scheduled for
    (passes/schedule/gpu_target.py; default: that of the device they run on).
    `optimize=False` skips the graph-level passes (folding, fusion): one kernel per operator.
    `schedules`: passes run on the kernels before the default schedules, e.g. the tuner's
    `autotune.apply_pass.tuned_schedules(db)` (for a GPU: `tuned_schedules(db, target=...,
    preset=...)`) or a hand-written `tile{sizes=... op=1}`.
    `load=False` compiles without loading the code, nor needing a GPU target's device: for
    `.save()` as a package to run elsewhere (the preset then defaults to "cuda", or for
    OpenCL to this machine's device kind, "opencl-gpu" without one).
    `feeds`: the inputs it will run on, checked (names, dtypes, shapes: InputError) right after
    the import, so that a wrong input is reported before the compile, not after it.
    """
    chosen = backend(target)  # an unknown target's error, before the work
    if load:
        chosen.check_available()  # no GPU, no point compiling for one
    t0 = time.perf_counter()
    module = import_model(model, input_shapes)
    t_import = time.perf_counter() - t0
    if feeds is not None:
        check_inputs(_signature(module)[0], feeds)
    compiled = compile_module(
        module,
        optimize=optimize,
        schedules=schedules,
        threads=threads,
        target=target,
        preset=preset,
        layout=layout,
        load=load,
    )
    compiled.timings = {"import": t_import, **compiled.timings}
    return compiled


def compile_report(
    model: str | Path | Any,
    input_shapes: Mapping[str, list[int]] | None = None,
    optimize: bool = True,
) -> dict[str, Any]:
    """What `ziggurat compile --report json` prints: kernels, fusion and memory figures, and the
    compile time of each level, from one full compilation to machine code."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    module = import_model(model, input_shapes)
    timings["import"] = time.perf_counter() - t0
    ctx = make_context()
    lower(module, "graph", ctx, timings, optimize=optimize)
    ops = list(module.walk())
    fused_groups = sum(1 for o in ops if o.name == "graph.fused")
    batch_norms = sum(1 for o in ops if o.name == "graph.batch_norm")
    lower(module, "loops", ctx, timings, start="graph")
    main = main_function(module)
    assert main is not None, "the module has no @main"
    calls = [o for o in main.walk() if isinstance(o, func.CallOp)]
    plan = module.attributes.get(MEMORY_PLAN_ATTR)
    total = arena = 0
    if isinstance(plan, DictionaryAttr):
        t, a = plan.data.get("total_bytes"), plan.data.get("arena_bytes")
        total = t.value.data if isinstance(t, IntegerAttr) else 0
        arena = a.value.data if isinstance(a, IntegerAttr) else 0
    lower(module, "llvm-dialect", ctx, timings, start="loops")
    t0 = time.perf_counter()
    compile_llvm(module)
    timings["machine-code"] = time.perf_counter() - t0
    return {
        "kernels": len(calls),
        "unique_kernels": len({c.callee.root_reference.data for c in calls}),
        "fused_groups": fused_groups,
        "batch_norms_left": batch_norms,
        "intermediate_bytes_total": total,
        "intermediate_bytes_peak_planned": arena,
        "peak_over_total": round(arena / total, 4) if total else 0.0,
        "compile_seconds": {k: round(v, 3) for k, v in timings.items()},
        "compile_seconds_total": round(sum(timings.values()), 3),
    }


__all__ = [
    "TARGETS",
    "CompiledModel",
    "TensorSpec",
    "compile_model",
    "compile_module",
    "compile_report",
    "import_model",
    "level_passes",
    "lower",
    "lower_to_gpu",
    "make_context",
    "run_passes",
]
