"""The Python API: compile an ONNX model through the levels and run it on numpy arrays.

    model = compile_model("resnet.onnx")          # or an onnx.ModelProto
    outputs = model.run({"input": x})             # dict name -> np.ndarray

`lower(module, level)` runs the same pass lists one level at a time; `ziggurat compile --emit`
and the tests use it, so every level printed is exactly what the compiler runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from compiler import registry
from compiler.errors import CompileError, InputError
from compiler.pipelines import LEVEL_PASSES
from passes.analysis.main_function import main_function

LEVELS = ("graph", "tensor", "loops", "llvm-dialect")
"""IR levels in lowering order; `llvm-ir` and `asm` come from the backend after the last one."""

def make_context() -> Context:
    """A context with every xDSL dialect and ours, loaded lazily."""
    from xdsl.dialects import get_all_dialects

    ctx = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        # llvm.extractelement & co. (xDSL lacks them) load with `llvm`
        ctx.register_dialect(name, registry.llvm_with_extras if name == "llvm" else factory)
    for name, factory in registry.dialect_factories().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def make_pass(spec: str) -> ModulePass:
    """One pass from a spec such as `tile{sizes=4,4}`; ours first, then xDSL's."""
    from xdsl.transforms import get_all_passes

    (arg,) = parse_pipeline(spec)
    if arg.name in registry.PASSES:
        cls = registry.get_pass(arg.name)
    else:
        xdsl_passes = get_all_passes()
        if arg.name not in xdsl_passes:
            raise CompileError(f"unknown pass '{arg.name}'")
        cls = xdsl_passes[arg.name]()
    return cls.from_pass_spec(arg)


_OPTION_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def quote_option(value: str, what: str = "option value") -> str:
    """`value` as a quoted pass-option string that xDSL's pipeline parser reads back exactly
    (a path with a backslash, a quote or a newline included); CompileError for the characters
    it cannot carry at all (carriage return, form feed, vertical tab, undecodable bytes)."""
    bad = next((c for c in value if c in "\r\f\v" or "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise CompileError(
            f"{what} {value!r} contains {bad!r}, which a pass option cannot carry: rename it"
        )
    return '"' + "".join(_OPTION_ESCAPES.get(c, c) for c in value) + '"'


def run_passes(ctx: Context, module: ModuleOp, specs: list[str], verify_each: bool = False) -> None:
    """Apply passes in order. The module is verified once at the end (after every pass with
    `verify_each`): verifying costs more than most passes on big loop nests, and ziggurat-opt
    remains the tool for hunting a pass that breaks the IR."""
    name = "?"
    try:
        for spec in specs:
            p = make_pass(spec)
            name = p.name
            p.apply(ctx, module)
            if verify_each:
                module.verify()
        name = specs[-1] if specs else "?"
        module.verify()
    except (DiagnosticException, VerifyException) as e:
        raise CompileError(f"pass '{name}' failed: {e}") from e


def lower(
    module: ModuleOp,
    level: str,
    ctx: Context | None = None,
    timings: dict[str, float] | None = None,
    optimize: bool = True,
    db: str | None = None,
    threads: int = 1,
) -> ModuleOp:
    """Lower a freshly imported graph-level module in place down to `level` (one of LEVELS).

    With `optimize`, the graph-level passes (folding, simplification, fusion) run first. With
    `threads` > 1 the default schedules run the outer loops of large kernels across threads.
    """
    ctx = ctx or make_context()
    for lvl in LEVELS[: LEVELS.index(level) + 1]:
        if lvl == "graph" and not optimize:
            continue
        t0 = time.perf_counter()
        passes = list(LEVEL_PASSES[lvl])
        if lvl == "loops" and db:  # tuned schedules first; default-schedule fills in the rest
            spec = f"autotune{{db={quote_option(db, 'database path')} threads={threads}}}"
            passes.insert(passes.index("outline-kernels") + 1, spec)
        if lvl == "loops" and threads > 1:
            passes[passes.index("default-schedule")] = f"default-schedule{{threads={threads}}}"
        run_passes(ctx, module, passes)
        if timings is not None:
            timings[lvl] = time.perf_counter() - t0
    return module


def import_model(model: str | Path | Any, input_shapes: Mapping[str, list[int]] | None = None) -> ModuleOp:
    from compiler.frontend.onnx import import_onnx

    return import_onnx(model, dict(input_shapes) if input_shapes else None)


@dataclass
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def _signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Input and output specs of @main at the graph or tensor level (names from ziggurat.name)."""
    main = main_function(module)
    assert main is not None, "the module has no @main"
    ftype = main.function_type

    def name_of(attrs, i: int, default: str) -> str:
        if attrs is not None:
            a = attrs.data[i].data.get("ziggurat.name")
            if isinstance(a, StringAttr):
                return a.data
        return default

    def spec(t, name: str) -> TensorSpec:
        return TensorSpec(name, tuple(t.get_shape()), np.dtype(np.float32))

    ins = [spec(t, name_of(main.arg_attrs, i, f"arg{i}")) for i, t in enumerate(ftype.inputs.data)]
    outs = [spec(t, name_of(main.res_attrs, i, f"result{i}")) for i, t in enumerate(ftype.outputs.data)]
    return ins, outs


@dataclass
class CompiledModel:
    """A model compiled to machine code for the CPU; `run` maps input arrays to output arrays."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    timings: dict[str, float] = field(default_factory=dict)
    threads: int = 1
    """Threads of the parallel-for runtime while this model runs (kernels with parallel loops)."""

    def _use_threads(self) -> None:
        if getattr(self.program, "parallel", False):
            from compiler import parallel_runtime

            parallel_runtime.set_num_threads(self.threads)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs]

    def check_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        unknown = [k for k in feeds if k not in self.input_names]
        if unknown:
            raise InputError(f"unknown input name(s) {unknown}; the model's inputs are {self.input_names}")
        arrays = []
        for spec in self.inputs:
            if spec.name not in feeds:
                raise InputError(f"missing input '{spec.name}' (shape {list(spec.shape)}, float32)")
            a = np.asarray(feeds[spec.name])
            if a.dtype != np.float32:
                raise InputError(f"input '{spec.name}' has dtype {a.dtype}; the model expects float32")
            if tuple(a.shape) != spec.shape:
                raise InputError(
                    f"input '{spec.name}' has shape {list(a.shape)}; the model expects {list(spec.shape)}"
                )
            arrays.append(a)
        return arrays

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        from compiler.runtime import aligned_copy, aligned_empty

        args = [aligned_copy(a) for a in self.check_inputs(feeds)]
        outs = [aligned_empty(s.shape, s.dtype) for s in self.outputs]
        self._use_threads()
        self.program.function("main")(*args, *outs)
        return {s.name: o for s, o in zip(self.outputs, outs)}

    def runner(self, feeds: Mapping[str, np.ndarray]):
        """A zero-argument callable that runs the model on fixed buffers (for timing)."""
        from compiler.runtime import aligned_copy, aligned_empty

        args = [aligned_copy(a) for a in self.check_inputs(feeds)]
        outs = [aligned_empty(s.shape, s.dtype) for s in self.outputs]
        fn = self.program.function("main")
        self._use_threads()
        return lambda: fn(*args, *outs)


def compile_module(
    module: ModuleOp,
    ctx: Context | None = None,
    optimize: bool = False,
    jobs: int | None = None,
    db: str | None = None,
    threads: int = 1,
) -> CompiledModel:
    """Compile a graph-level module to a runnable CompiledModel (as it is, unless `optimize`).

    Kernels are lowered and compiled by `jobs` worker processes (default: one per core); the
    model runs its parallel loops on `threads` threads.
    """
    if threads < 1:
        raise CompileError(f"threads must be at least 1 (got {threads})")
    from compiler.parallel_compile import compile_split, default_workers

    ctx = ctx or make_context()
    timings: dict[str, float] = {}
    ins, outs = _signature(module)
    lower(module, "loops", ctx, timings, optimize=optimize, db=db, threads=threads)
    t0 = time.perf_counter()
    program, _ = compile_split(module, ctx, jobs or default_workers())
    timings["llvm+machine-code"] = time.perf_counter() - t0
    return CompiledModel(ins, outs, program, timings, threads)


def compile_model(
    model: str | Path | Any,
    input_shapes: Mapping[str, list[int]] | None = None,
    target: str = "cpu",
    optimize: bool = True,
    db: str | None = None,
    threads: int = 1,
) -> CompiledModel:
    """Import an ONNX model (path or ModelProto) and compile it for `target`.

    `optimize=False` skips the graph-level passes (folding, fusion): one kernel per operator.
    """
    if target != "cpu":
        raise CompileError(f"unknown target '{target}' (available: cpu)")
    t0 = time.perf_counter()
    module = import_model(model, input_shapes)
    t_import = time.perf_counter() - t0
    compiled = compile_module(module, optimize=optimize, db=db, threads=threads)
    compiled.timings = {"import": t_import, **compiled.timings}
    return compiled


def compile_report(
    model: str | Path | Any, input_shapes: Mapping[str, list[int]] | None = None, optimize: bool = True
) -> dict[str, Any]:
    """What `ziggurat compile --report json` prints: kernels, fusion and memory figures, and the
    compile time of each level, from one full compilation to machine code."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr

    from compiler.backends.llvm_cpu import compile_module as compile_llvm

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    module = import_model(model, input_shapes)
    timings["import"] = time.perf_counter() - t0
    ctx = make_context()
    lower(module, "graph", ctx, timings, optimize=optimize)
    ops = list(module.walk())
    fused_groups = sum(1 for o in ops if o.name == "graph.fused")
    batch_norms = sum(1 for o in ops if o.name == "graph.batch_norm")
    for lvl in ("tensor", "loops"):
        t0 = time.perf_counter()
        run_passes(ctx, module, LEVEL_PASSES[lvl])
        timings[lvl] = time.perf_counter() - t0
    main = main_function(module)
    assert main is not None, "the module has no @main"
    calls = [o for o in main.walk() if isinstance(o, func.CallOp)]
    plan = module.attributes.get("ziggurat.memory_plan")
    total = arena = 0
    if isinstance(plan, DictionaryAttr):
        t, a = plan.data.get("total_bytes"), plan.data.get("arena_bytes")
        total = t.value.data if isinstance(t, IntegerAttr) else 0
        arena = a.value.data if isinstance(a, IntegerAttr) else 0
    t0 = time.perf_counter()
    run_passes(ctx, module, LEVEL_PASSES["llvm-dialect"])
    timings["llvm-dialect"] = time.perf_counter() - t0
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


__all__ = ["CompiledModel", "compile_model", "compile_module", "compile_report", "lower", "make_context"]
