"""`ziggurat compile`: the program at one level (`--emit`), a package of machine code
(`-o X.zpkg`), or figures about the compile (`--report json`, `--timing`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from compiler.cli.commands.options import (
    add_db,
    add_input_shape,
    add_layout,
    conv_layout,
    db_schedules,
    fixed_input_shapes,
    gpu_layout,
    report_db_use,
)
from compiler.cli.common import (
    EMIT_LEVELS,
    GPU_EMITS,
    PACKAGE_SUFFIX,
    TARGETS,
    UsageError,
    check_threads,
    model_arg,
    progress_on_terminal,
    write_stdout,
    write_text,
)
from compiler.levels import GPU_LEVEL, LEVELS


def cmd_compile(args: argparse.Namespace) -> int:
    if not args.timing:
        with progress_on_terminal():
            return _cmd_compile(args)
    import resource

    from compiler.compile_timing import collecting

    def cpu_s() -> float:
        own, kids = (
            resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    cpu0 = cpu_s()
    with collecting() as timer:  # every pass and machine-code step records its seconds
        code = _cmd_compile(args)
    sys.stderr.write(timer.report())
    sys.stderr.write(f"  CPU seconds (this process and its workers): {cpu_s() - cpu0:.4f}\n")
    return code


def _cmd_compile(args: argparse.Namespace) -> int:
    from compiler.compile_timing import timed
    from compiler.model import compile_report, import_model, lower

    t0 = time.perf_counter()
    shapes = fixed_input_shapes(args, model_arg(args.model))
    optimize = not args.no_graph_opt
    check_threads(args.threads)
    if args.report:
        write_stdout(
            json.dumps(compile_report(model_arg(args.model), shapes, optimize=optimize), indent=2)
            + "\n"
        )
        if not args.output:
            return 0
    if args.output and args.output.endswith(PACKAGE_SUFFIX):
        _compile_package(args, shapes, optimize)
        return 0
    args.emit = args.emit or "llvm-ir"
    if args.emit in GPU_EMITS or args.target != "cpu":
        _emit_gpu(args, shapes, optimize)
        return 0
    model = model_arg(args.model)
    with timed("import"):
        module = import_model(model, shapes)
    schedules = db_schedules(args.db, args.threads)
    layout = conv_layout(args, model)
    if args.emit in LEVELS:
        lower(
            module,
            args.emit,
            optimize=optimize,
            schedules=schedules,
            threads=args.threads,
            layout=layout,
        )
        write_text(str(module), args.output)
    else:
        from compiler.backends.llvm_cpu.compile import compile_to_asm, compile_to_llvm_ir

        lower(
            module,
            "llvm-dialect",
            optimize=optimize,
            schedules=schedules,
            threads=args.threads,
            layout=layout,
        )
        with timed(args.emit):
            text = compile_to_llvm_ir(module) if args.emit == "llvm-ir" else compile_to_asm(module)
        write_text(text, args.output)
    if args.db:  # says nothing when the emitted level comes before the schedules
        report_db_use(dict(module.attributes))
    if args.verbose:
        print(f"compiled in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def _compile_package(
    args: argparse.Namespace, shapes: dict[str, list[int]], optimize: bool
) -> None:
    """`compile MODEL -o X.zpkg`: the machine code, weights and manifest in one file
    (compiler/package/), for `ziggurat run X.zpkg` or `compiler.package.load_package`."""
    from compiler.model import compile_model

    if args.emit is not None:
        raise UsageError(
            f"--emit {args.emit} prints one level; a {PACKAGE_SUFFIX} output is a package of "
            "machine code: drop --emit or name another output file"
        )
    load = True
    if args.target != "cpu":  # GPU code: compiled here, loaded (a check) only if it can run here
        from compiler.backends.gpu.compile import unavailable_reason

        gpu_layout(args.layout)
        load = unavailable_reason(args.target) is None
    from compiler.compile_timing import active, timed

    model = model_arg(args.model)
    if (
        args.target == "cpu"
        and not args.timing
        and _package_from_cache(args, model, shapes, optimize)
    ):
        return
    compiled = compile_model(
        model,
        shapes,
        target=args.target,
        optimize=optimize,
        schedules=db_schedules(args.db, args.threads, args.target),
        threads=args.threads,
        layout=conv_layout(args, model),
        load=load,
    )
    if (timer := active()) is not None:  # the levels and machine code recorded themselves
        timer.add_first("import", compiled.timings.get("import", 0.0))
    if args.db:
        report_db_use(compiled.notes)
    with timed("write package"):
        compiled.save(args.output)
    if args.verbose:
        print(f"package written to {args.output}", file=sys.stderr)


def _package_from_cache(
    args: argparse.Namespace, model: Any, shapes: dict[str, list[int]], optimize: bool
) -> bool:
    """`compile -o X.zpkg` through the compile cache (compiler/compile_cache.py): a hit is
    written to X.zpkg as a self-contained package, a miss compiles and fills the cache.
    False when the cache is off: the caller compiles."""
    from compiler import compile_cache

    if not compile_cache.enabled(not args.no_cache):
        return False
    compiled = compile_cache.cached_compile(
        model,
        shapes,
        optimize=optimize,
        schedules=db_schedules(args.db, args.threads, args.target),
        threads=args.threads,
        layout=conv_layout(args, model),
    )
    if args.db:
        report_db_use(compile_cache.model_notes(compiled))
    path = getattr(compiled, "path", None)
    if path is None:  # compiled now (a miss, or a cache that could not be used)
        compiled.save(args.output)  # type: ignore[union-attr]
    else:  # the entry, its weights put back in from the cache's store
        compile_cache.export_entry(path, args.output)
    if args.verbose:
        hit = " (from the compile cache)" if path is not None else ""
        print(f"package written to {args.output}{hit}", file=sys.stderr)
    return True


def _emit_gpu(args: argparse.Namespace, shapes: dict[str, list[int]], optimize: bool) -> None:
    """`--emit gpu|opencl|cuda`: the gpu level or the kernel source. The schedules are for the
    device kind: CUDA's, or that of this machine's OpenCL device (a GPU's when there is none);
    `--emit gpu` takes the kind from --target (CUDA's by default)."""
    from compiler.backends.gpu.compile import kernel_source
    from compiler.backends.registry import backend
    from compiler.model import import_model, lower_to_gpu

    if args.emit not in GPU_EMITS:
        raise UsageError(
            f"--target {args.target} compiles for a GPU: --emit one of {', '.join(GPU_EMITS)}"
        )
    gpu_layout(args.layout)
    api = args.emit if args.emit != GPU_LEVEL else ("opencl" if args.target == "opencl" else "cuda")
    if api == "opencl" and args.target == "cuda" or api == "cuda" and args.target == "opencl":
        raise UsageError(f"--emit {args.emit} does not fit --target {args.target}")
    preset = backend(api).resolve_preset(None)  # the device's kind; a GPU's without one
    assert preset is not None
    schedules = []
    if args.db:  # records tuned for this preset (measured on a device of its kind)
        from autotune.apply_pass import tuned_schedules

        schedules = tuned_schedules(args.db, target=api, preset=preset)
    module = import_model(model_arg(args.model), shapes)
    lower_to_gpu(module, preset, optimize=optimize, schedules=schedules)
    write_text(str(module) if args.emit == GPU_LEVEL else kernel_source(module, api), args.output)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    c = subparsers.add_parser("compile", help="print the program at one level")
    c.add_argument("model")
    c.add_argument("--emit", choices=EMIT_LEVELS, help="the level to print (default: llvm-ir)")
    c.add_argument(
        "-o", "--output", help=f"write there instead; a {PACKAGE_SUFFIX} file is a package to run"
    )
    add_input_shape(c)
    c.add_argument("-v", "--verbose", action="store_true")
    c.add_argument(
        "--report", choices=["json"], help="print kernel, fusion, memory and compile-time figures"
    )
    c.add_argument(
        "--no-graph-opt",
        action="store_true",
        help="skip folding and fusion (one kernel per operator)",
    )
    add_db(c)
    c.add_argument(
        "--threads",
        type=int,
        default=1,
        help="run the outer loops of large kernels on this many threads",
    )
    c.add_argument(
        "--target",
        default="cpu",
        choices=TARGETS,
        help="with --emit gpu: schedule the kernels for this kind of device (opencl, cuda); with "
        f"-o X{PACKAGE_SUFFIX}: a package for it (compiled without the device if there is none)",
    )
    add_layout(c)
    c.add_argument(
        "--timing",
        action="store_true",
        help="report the seconds of every level, pass and machine-code step on stderr",
    )
    c.add_argument(
        "--no-cache",
        action="store_true",
        help="with -o X.zpkg: compile afresh, neither reading nor filling the compile cache (as "
        "does ZIGGURAT_NO_CACHE=1); --timing compiles afresh too",
    )
    c.set_defaults(fn=cmd_compile)
