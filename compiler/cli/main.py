"""`ziggurat`: compile, run, benchmark and demo ONNX models from the command line.

Every user error ends in one `ziggurat: error: ...` line and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from compiler.levels import GPU_LEVEL, LAYOUTS, LEVELS

if TYPE_CHECKING:
    from xdsl.ir import Attribute
    from xdsl.passes import ModulePass

GPU_EMITS = (GPU_LEVEL, "opencl", "cuda")
"""The GPU side of `--emit`: the gpu level (MLIR) and the kernels as OpenCL C or CUDA C."""
EMIT_LEVELS = (*LEVELS, "llvm-ir", "asm", *GPU_EMITS)
"""What `ziggurat compile --emit` prints: every IR level, then LLVM IR or assembly, and the
GPU level and kernel source."""
TARGETS = ("cpu", "opencl", "cuda")
"""`--target`: where the model runs (compiler.model.TARGETS; not imported: --help stays fast)."""
PACKAGE_SUFFIX = ".zpkg"
"""What `compile -o` writes as a package and `run` loads as one (compiler.package.SUFFIX)."""


class UsageError(Exception):
    """Bad command-line arguments (shape strings, files)."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors exit with 1 like every other user error (argparse uses 2)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def parse_input_shapes(specs: Sequence[str] | None) -> dict[str, list[int]]:
    """`NAME=1x3x224x224` (or `NAME=1,3,224,224`) strings -> {name: dims}."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        name, sep, dims = spec.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in re.split(r"[x,]", dims.lower())]
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise UsageError(
                f"bad --input-shape '{spec}': expected NAME=D1xD2x... (or D1,D2,...) "
                "with positive dims"
            ) from None
    return shapes


def _write_file(path: str, write: Callable[[BinaryIO], object]) -> None:
    """Write the output file the user named, exactly there. A failure (no such folder, read-only,
    full disk) is a user error naming the path, and a half-written regular file is removed."""
    regular = False
    try:
        with open(path, "wb") as f:
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode) and not os.path.islink(path)
            write(f)
    except OSError as e:
        if regular:  # never a device (/dev/full) or what a link points to
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise UsageError(f"cannot write output file {path}: {e.strerror or e}") from None


def _stdout(text: str) -> None:
    """Write to standard output; a full disk or closed file is a user error (a broken pipe is not
    ours to report: `| head` is normal use)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise UsageError(f"cannot write to standard output: {e.strerror or e}") from None


def _check_readable(path: str, what: str) -> None:
    """A user error naming `path` unless it is a regular file this process can read."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} not found: {path}")
    if p.is_dir():
        raise UsageError(f"{what} {path} is a directory")
    if not p.is_file():
        raise UsageError(f"{what} {path} is not a regular file")
    try:
        with open(p, "rb") as f:
            f.read(1)
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None


def _write(text: str, output: str | None) -> None:
    if output:
        _write_file(output, lambda f: f.write(text.encode("utf-8")))
    else:
        _stdout(text if text.endswith("\n") else text + "\n")


@contextlib.contextmanager
def _progress_on_terminal() -> Iterator[None]:
    """On a terminal, one stderr line per compile step as it ends (`compile: loops 1.2 s`): a
    long compile is not silent. Logs and pipes get nothing (the result lines are what they
    need); --timing gives the whole report."""
    if not sys.stderr.isatty():
        yield
        return
    from compiler.compile_timing import CompileTimer, collecting

    def show(name: str, seconds: float) -> None:
        print(f"compile: {name} {seconds:.1f} s", file=sys.stderr, flush=True)

    with collecting(CompileTimer(on_step=show)):
        yield


def cmd_compile(args: argparse.Namespace) -> int:
    if not args.timing:
        with _progress_on_terminal():
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
    shapes = parse_input_shapes(args.input_shape)
    optimize = not args.no_graph_opt
    _check_threads(args.threads)
    if args.report:
        _stdout(
            json.dumps(compile_report(_model_arg(args.model), shapes, optimize=optimize), indent=2)
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
    model = _model_arg(args.model)
    with timed("import"):
        module = import_model(model, shapes)
    schedules = _schedules(args.db, args.threads)
    layout = _layout(args, model)
    if args.emit in LEVELS:
        lower(
            module,
            args.emit,
            optimize=optimize,
            schedules=schedules,
            threads=args.threads,
            layout=layout,
        )
        _write(str(module), args.output)
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
        _write(text, args.output)
    if args.db:  # says nothing when the emitted level comes before the schedules
        _report_db_use(dict(module.attributes))
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

        _gpu_layout(args.layout)
        load = unavailable_reason(args.target) is None
    from compiler.compile_timing import active, timed

    model = _model_arg(args.model)
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
        schedules=_schedules(args.db, args.threads, args.target),
        threads=args.threads,
        layout=_layout(args, model),
        load=load,
    )
    if (timer := active()) is not None:  # the levels and machine code recorded themselves
        timer.add_first("import", compiled.timings.get("import", 0.0))
    if args.db:
        _report_db_use(compiled.notes)
    with timed("write package"):
        compiled.save(args.output)
    if args.verbose:
        print(f"package written to {args.output}", file=sys.stderr)


def _package_from_cache(
    args: argparse.Namespace, model: Any, shapes: dict[str, list[int]], optimize: bool
) -> bool:
    """`compile -o X.zpkg` through the compile cache (compiler/compile_cache.py): a hit is
    copied to X.zpkg (the entry is a package already), a miss compiles and fills the cache.
    False when the cache is off: the caller compiles."""
    from compiler import compile_cache

    if not compile_cache.enabled(not args.no_cache):
        return False
    compiled = compile_cache.cached_compile(
        model,
        shapes,
        optimize=optimize,
        schedules=_schedules(args.db, args.threads, args.target),
        threads=args.threads,
        layout=_layout(args, model),
    )
    if args.db:
        _report_db_use(compile_cache.model_notes(compiled))
    path = getattr(compiled, "path", None)
    if path is None:  # compiled now (a miss, or a cache that could not be used)
        compiled.save(args.output)  # type: ignore[union-attr]
    else:
        with open(path, "rb") as entry:
            _write_file(args.output, lambda f: shutil.copyfileobj(entry, f))
        os.chmod(args.output, 0o644)
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
    _gpu_layout(args.layout)
    api = args.emit if args.emit != GPU_LEVEL else ("opencl" if args.target == "opencl" else "cuda")
    if api == "opencl" and args.target == "cuda" or api == "cuda" and args.target == "opencl":
        raise UsageError(f"--emit {args.emit} does not fit --target {args.target}")
    preset = backend(api).resolve_preset(None)  # the device's kind; a GPU's without one
    assert preset is not None
    schedules = []
    if args.db:  # records tuned for this preset (measured on a device of its kind)
        from autotune.apply_pass import tuned_schedules

        schedules = tuned_schedules(args.db, target=api, preset=preset)
    module = import_model(_model_arg(args.model), shapes)
    lower_to_gpu(module, preset, optimize=optimize, schedules=schedules)
    _write(str(module) if args.emit == GPU_LEVEL else kernel_source(module, api), args.output)


def _load_npz(path: str) -> dict:
    import numpy as np

    _check_readable(path, "inputs file")
    try:  # allow_pickle=False: a text or object file must fail here, not ask to unpickle
        data = np.load(path, allow_pickle=False)
    except Exception:  # numpy raises several types for a bad archive
        data = None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UsageError(
            f"{path} is not a valid .npz archive (make one with numpy.savez(path, NAME=array, ...))"
        )
    with data:
        try:
            return {k: data[k] for k in data.files}
        except Exception as e:
            raise UsageError(f"{path} is not a valid .npz archive: {e}") from None


def _save_outputs(outputs: dict[str, Any], path: str) -> None:
    """The outputs to the .npz file the user named (exactly there: no `.npz` added), listed."""
    import numpy as np

    save: Callable[..., None] = np.savez  # numpy's stub types **kwds as its own options
    _write_file(path, lambda f: save(f, **outputs))
    _stdout(
        "".join(f"{name}: shape {list(value.shape)} -> {path}\n" for name, value in outputs.items())
    )


def _run_package(args: argparse.Namespace) -> int:
    """`run X.zpkg`: the package's code through the lean runtime (compiler/package/: neither
    the passes nor ONNX are imported). It holds compiled code: compile options do not apply."""
    from compiler.package import load_package

    for flag, given in (
        ("--input-shape", args.input_shape),
        ("--no-graph-opt", args.no_graph_opt),
        ("--db", args.db),
        ("--layout", args.layout),
    ):
        if given:
            raise UsageError(
                f"{flag} does not apply to a package, which holds compiled code: give it to "
                f"`ziggurat compile MODEL -o {args.model}`"
            )
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {args.threads})")
    model = load_package(args.model, threads=args.threads, target=args.target)
    _save_outputs(model.run(_load_npz(args.inputs)), args.output)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.model.endswith(PACKAGE_SUFFIX):
        return _run_package(args)
    args.target = args.target or "cpu"
    from compiler.compile_cache import cached_compile, model_notes

    args.threads = 1 if args.threads is None else args.threads
    _check_threads(args.threads)
    source = _model_arg(args.model)  # a path or zoo:NAME, as compile, bench and tune take
    feeds = _load_npz(args.inputs)
    with _progress_on_terminal():
        model = cached_compile(  # compiler/compile_cache.py: the second run of a model is a load
            source,
            parse_input_shapes(args.input_shape),
            target=args.target,
            optimize=not args.no_graph_opt,
            schedules=_schedules(args.db, args.threads, args.target),
            threads=args.threads,
            layout=_layout(args, source),
            cache=not args.no_cache,
            feeds=feeds,  # a wrong input is reported before the compile
        )
    if args.db:
        _report_db_use(model_notes(model))
    _save_outputs(model.run(feeds), args.output)
    return 0


def _positive_seconds(text: str) -> float:
    """argparse type of `--seconds`: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{text}'") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (got {text})")
    return value


def _non_negative_int(text: str) -> int:
    """argparse type of a count or seed that may be 0 (`--seed`, `demo --trials`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more (got {text})")
    return value


def _check_threads(threads: int) -> None:
    from passes.schedule.target import MAX_THREADS

    if threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {threads})")
    if threads > MAX_THREADS:
        raise UsageError(
            f"--threads must be at most {MAX_THREADS}, the thread pool's limit (got {threads})"
        )


def _bench_directory(args: argparse.Namespace) -> int:
    """`ziggurat bench DIR`: every model of the directory at 1 thread and at --threads (2 by
    default), as one table of ratios against onnxruntime."""
    from compiler.benchmark import bench_directory, directory_table

    if args.layout:
        raise UsageError("--layout applies to one model; a directory is benched in the default")
    threads = (1, args.threads if args.threads > 1 else 2)
    if not any(Path(args.model).glob("*.onnx")):
        raise UsageError(f"no .onnx files in the directory {args.model}")

    def tuned(path: Path, t: int) -> dict[str, Any]:
        """--db's schedules and layout for one model at `t` threads (each model's own layout
        record; the schedules are per kernel, so one database serves every model)."""
        if not args.db:
            return {}
        return {
            "schedules": _schedules(args.db, t, args.target),
            "layout": _layout(args, _model_arg(str(path)), t),
        }

    rows = bench_directory(
        args.model,
        threads,
        args.seconds,
        target=args.target,
        progress=lambda name: print(f"bench: {name}", file=sys.stderr, flush=True),
        options=tuned,
    )
    if args.json:
        _stdout(json.dumps(rows) + "\n")
    else:
        _stdout(directory_table(rows, threads) + "\n")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    _check_threads(args.threads)
    if args.profile is not None and args.target != "cpu":
        raise UsageError("--profile times kernels on the CPU target only")
    if args.profile is not None and args.profile < 0:
        raise UsageError(f"--profile N must be at least 0 (got {args.profile})")
    if Path(args.model).is_dir():
        if args.profile is not None:
            raise UsageError("--profile applies to one model, not a directory")
        return _bench_directory(args)
    from compiler.benchmark import bench_model

    notes: dict[str, Attribute] = {}
    model = _model_arg(args.model)
    layout = _layout(args, model)
    with _progress_on_terminal():
        result = bench_model(
            model,
            args.threads,
            args.seconds,
            schedules=_schedules(args.db, args.threads, args.target),
            notes=notes,
            target=args.target,
            layout=layout,
        )
    if args.db:
        _report_db_use(notes)
    if args.profile is not None:
        result["profile"] = _profile(args, layout)
    if args.json:
        _stdout(json.dumps(result) + "\n")
    else:
        _stdout(
            f"model            {result['model']}\n"
            f"cpu              {result['cpu']}\n"
            f"compile          {result['compile_s']:.2f} s  {result['compile_breakdown_s']}\n"
            f"layout           {layout}\n"
            f"ziggurat         {result['ziggurat_ms']:.3f} ms   (target={result['target']}, "
            f"threads={args.threads})\n"
            f"onnxruntime      {result['onnxruntime_ms']:.3f} ms   (threads={args.threads})\n"
            f"ratio            {result['ratio']:.2f}x onnxruntime latency   max |err| {result['max_abs_err']:.2e}\n"
        )
        if args.profile is not None:
            _stdout(result["profile"]["table"] + "\n")
    return 0


def _profile(args: argparse.Namespace, layout: str) -> dict[str, Any]:
    """`bench --profile`: the model compiled again with its kernel calls timed, run for
    --seconds; rows in call order (the JSON) and a table of the slowest."""
    from compiler.profile import profile_model

    profile = profile_model(
        _model_arg(args.model),
        threads=args.threads,
        seconds=args.seconds,
        schedules=_schedules(args.db, args.threads, args.target),
        layout=layout,
    )
    return {
        "total_ms": round(profile.total_s * 1e3, 4),
        "runs": profile.runs,
        "kernels": [
            {"kernel": r.kernel, "what": r.what, "ms": round(r.seconds * 1e3, 4), "flops": r.flops}
            for r in profile.rows
        ],
        "table": profile.table(args.profile or None),
    }


def _model_arg(name: str) -> Any:
    """A path, or `zoo:NAME` for a built-in model."""
    from compiler import zoo

    try:
        model = zoo.model_from_arg(name)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    if isinstance(model, str):
        _check_readable(model, "model file")
    return model


def _tuning_target(args: argparse.Namespace):
    """The target `tune` measures on (a GPU one checked to be usable here, before any work)."""
    from autotune.tuning_target import tuning_target

    if args.target == "cpu":
        if args.preset:
            raise UsageError("--preset is for --target opencl or cuda")
        return tuning_target("cpu", threads=args.threads)
    from compiler.backends.gpu.compile import preset_for, unavailable_reason

    if args.threads != 1:
        raise UsageError("--threads is a CPU option; a GPU target runs on its device's threads")
    reason = unavailable_reason(args.target)
    if reason is not None:
        if args.dask:  # the workers measure; each new best is re-checked here, on this machine
            raise UsageError(
                f"target '{args.target}' with --dask re-checks each new best config on this "
                f"machine's own {args.target} device, and there is none: {reason}"
            )
        raise UsageError(f"target '{args.target}' cannot tune on this machine: {reason}")
    try:
        return tuning_target(args.target, args.preset or preset_for(args.target))
    except ValueError as e:
        raise UsageError(str(e)) from None


def cmd_tune(args: argparse.Namespace) -> int:
    from autotune.task import extract_tasks
    from autotune.tune_model import check_plotting, plot_curves, tune_tasks

    _check_threads(args.threads)
    if args.trials < 1:
        raise UsageError("--trials must be a positive number")
    from autotune.apply_pass import check_database_file

    check_database_file(args.db)  # /etc/passwd is no database to append records to
    if args.plot:
        check_plotting()  # before the tuning it would come after
    tls_files = (args.dask_tls_ca, args.dask_tls_cert, args.dask_tls_key)
    if not args.dask and (any(tls_files) or args.dask_insecure):
        raise UsageError(
            "--dask-tls-ca, --dask-tls-cert, --dask-tls-key and --dask-insecure need --dask"
        )
    target = _tuning_target(args)
    model = _model_arg(args.model)
    measurer = None
    if args.dask:  # connected first: an unusable cluster is reported before any local work
        # its errors (bad TLS files, an unencrypted remote scheduler) are ZigguratErrors
        from autotune.distributed import DaskMeasurer, tls_security

        security = tls_security(*tls_files) if any(tls_files) else None
        measurer = DaskMeasurer(
            args.dask,
            measure_kwargs=target.remote_measure_kwargs(),
            security=security,
            allow_insecure=args.dask_insecure,
        )
        if measurer.device is not None:  # records name the workers' device, not this machine's
            target = target.on_device(measurer.device)
        on = measurer.device.get("name", "?") if measurer.device else measurer.target["cpu"]
        print(f"measuring on {measurer.n_workers} dask workers ({on})", file=sys.stderr)
    try:
        layout = _tuning_layout(args, model, args.target != "cpu")
        tasks = extract_tasks(model, layout=layout)
        where = target.describe()
        print(
            f"{len(tasks)} tasks; {args.trials} trials with the {args.tuner} tuner on {where}"
            f"{' with transfer learning' if args.transfer else ''}; records -> {args.db}",
            file=sys.stderr,
        )
        summary = tune_tasks(
            tasks,
            args.db,
            args.trials,
            tuner=args.tuner,
            seed=args.seed,
            measurer=measurer,
            transfer=args.transfer,
            target=target,
        )
    finally:
        if measurer is not None:
            measurer.close()
    print(summary.table())
    if args.plot:
        plot_curves(summary, args.plot)
        print(f"tuning curves -> {args.plot}")
    return 0


def _tuning_layout(args: argparse.Namespace, model: Any, gpu: bool) -> str:
    """The layout `tune` tunes the kernels in: --layout, or (search) the fastest candidate
    timed on the whole model with the database's schedules, its timings recorded in --db."""
    if gpu:
        return _gpu_layout(args.layout)
    if args.layout != "search":
        return args.layout
    from autotune.layout_choice import choose_layout, has_blocked_convs, timing_table
    from compiler.frontend.onnx import load_model

    if not has_blocked_convs(load_model(model)):
        print("layout: no convolution to lay out; nothing to search", file=sys.stderr)
        return "auto"
    layout, timings = choose_layout(
        model,
        args.db,
        threads=args.threads,
        progress=lambda what: print(f"layout: {what}", file=sys.stderr, flush=True),
    )
    print(
        f"layout: whole-model latency at {args.threads} thread(s), current schedules:\n"
        f"{timing_table(timings)}\nlayout: tuning the kernels of {layout}",
        file=sys.stderr,
    )
    return layout


def _schedules(db: str | None, threads: int, target: str = "cpu") -> list[ModulePass]:
    """The kernels' schedules from a tuning database (`--db`), applied by the tuner's pass: for
    a GPU target, the records of the preset its device gets, measured on that device."""
    from autotune.apply_pass import tuned_schedules

    if not db or target == "cpu":
        return tuned_schedules(db, threads)
    from compiler.backends.gpu.compile import check_available, preset_for

    check_available(target)  # the preset is the device's kind
    return tuned_schedules(db, target=target, preset=preset_for(target))


def _gpu_layout(layout: str | None) -> str:
    """A GPU's layout, NCHW: a --layout that asks for a blocked one is a usage error."""
    if layout not in (None, "search", "auto", "NCHW"):
        raise UsageError(f"--layout {layout} is for the CPU; GPU kernels read NCHW")
    return "NCHW"


def _layout(args: argparse.Namespace, model: Any, threads: int | None = None) -> str:
    """The convolutions' layout: --layout, else the one `ziggurat tune` chose and recorded in
    --db for this model on this CPU at `threads` (default --threads), else the default (auto);
    a GPU's: NCHW."""
    if getattr(args, "target", "cpu") != "cpu":
        return _gpu_layout(args.layout)
    if args.layout:
        return args.layout
    if args.db:
        from autotune.layout_choice import tuned_layout

        chosen = tuned_layout(args.db, model, threads or args.threads)
        if chosen is not None:
            print(f"ziggurat: layout {chosen}, as tuned in {args.db}", file=sys.stderr)
            return chosen
    return "auto"


def _report_db_use(notes: dict[str, Attribute]) -> None:
    from autotune.apply_pass import autotune_stats

    stats = autotune_stats(notes)
    if stats is None:
        return
    print(
        f"ziggurat: {stats.tuned} of {stats.kernels} kernels use tuned schedules; "
        f"{len(stats.fallback)} fell back to the default schedule (no record), "
        f"{len(stats.default_won)} keep it (no record beat it)",
        file=sys.stderr,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: a built-in CNN compiled, tuned briefly, run and checked against onnxruntime."""
    import tempfile

    import numpy as np

    from autotune.task import extract_tasks
    from autotune.tune_model import tune_tasks
    from compiler import zoo
    from compiler.benchmark import ort_session, time_interleaved
    from compiler.model import compile_model

    proto = zoo.small_cnn(seed=args.seed)
    feeds = zoo.random_inputs(proto, seed=args.seed)
    t0 = time.perf_counter()
    default = compile_model(proto)
    compile_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "demo-tune.jsonl")
        t0 = time.perf_counter()
        if args.trials > 0:
            tune_tasks(extract_tasks(proto), db, args.trials, seed=args.seed)
        tune_s = time.perf_counter() - t0
        tuned = compile_model(proto, schedules=_schedules(db, 1))
    sess = ort_session(proto.SerializeToString(), 1)
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    results = {"default": default.run(feeds), "tuned": tuned.run(feeds)}
    t = time_interleaved(
        {
            "default": default.runner(feeds),
            "tuned": tuned.runner(feeds),
            "onnxruntime": lambda: sess.run(None, feeds),
        },
        0.3,
    )
    ok = all(np.allclose(r[k], ref[k], rtol=1e-4, atol=1e-5) for r in results.values() for k in ref)
    err = max(float(np.max(np.abs(r[k] - ref[k]))) for r in results.values() for k in ref)
    print("ziggurat demo: built-in small CNN (conv/batch-norm/relu, residual add, pooling, gemm)")
    print(f"  {'stage':<28}{'value':>16}")
    for stage, secs in default.timings.items():
        print(f"  {'compile: ' + stage:<28}{secs * 1e3:>13.1f} ms")
    print(f"  {'compile: total':<28}{compile_s * 1e3:>13.1f} ms")
    print(f"  {'tune: ' + str(args.trials) + ' trials':<28}{tune_s:>14.1f} s")
    print(f"  {'latency default schedule':<28}{t['default'] * 1e3:>13.3f} ms")
    print(f"  {'latency tuned':<28}{t['tuned'] * 1e3:>13.3f} ms")
    print(f"  {'latency onnxruntime':<28}{t['onnxruntime'] * 1e3:>13.3f} ms")
    print(f"  {'max |ours - ort|':<28}{err:>16.2e}")
    print(f"  {'matches onnxruntime':<28}{'yes' if ok else 'NO':>16}")
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog="ziggurat", description="ziggurat: compile ONNX models to machine code"
    )
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="print the program at one level")
    c.add_argument("model")
    c.add_argument("--emit", choices=EMIT_LEVELS, help="the level to print (default: llvm-ir)")
    c.add_argument(
        "-o", "--output", help=f"write there instead; a {PACKAGE_SUFFIX} file is a package to run"
    )
    c.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224")
    c.add_argument("-v", "--verbose", action="store_true")
    c.add_argument(
        "--report", choices=["json"], help="print kernel, fusion, memory and compile-time figures"
    )
    c.add_argument(
        "--no-graph-opt",
        action="store_true",
        help="skip folding and fusion (one kernel per operator)",
    )
    c.add_argument(
        "--db", help="apply the best schedules recorded by `ziggurat tune` in this database"
    )
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
    c.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="the convolutions' data layout on the CPU: NCHW[b]c blocks of b channels (auto: the "
        "vector width) or NCHW as imported; default: the one `ziggurat tune` recorded in --db, "
        "else auto",
    )
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

    r = sub.add_parser("run", help="run a model on inputs from an .npz file")
    r.add_argument("model", help=f"an .onnx file, or a {PACKAGE_SUFFIX} package")
    r.add_argument("--inputs", required=True)
    r.add_argument("--output", required=True)
    r.add_argument(
        "--target",
        choices=TARGETS,
        help="this CPU (default), an OpenCL device (ZIGGURAT_OPENCL_DEVICE=P:D picks one), a CUDA "
        "GPU; for a package: refuse one compiled for another target",
    )
    r.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224")
    r.add_argument("--no-graph-opt", action="store_true", help="skip folding and fusion")
    r.add_argument(
        "--db", help="apply the best schedules recorded by `ziggurat tune` in this database"
    )
    r.add_argument(
        "--threads",
        type=int,
        help="threads for the kernels' parallel loops (default: 1; a package's: as it was saved)",
    )
    r.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="the convolutions' data layout on the CPU: NCHW[b]c blocks of b channels (auto: the "
        "vector width) or NCHW as imported; default: the one `ziggurat tune` recorded in --db, "
        "else auto",
    )
    r.add_argument(
        "--no-cache",
        action="store_true",
        help="compile afresh, neither reading nor filling the compile cache (as does "
        "ZIGGURAT_NO_CACHE=1; the cache: ZIGGURAT_CACHE_DIR, default ~/.cache/ziggurat)",
    )
    r.set_defaults(fn=cmd_run)

    b = sub.add_parser("bench", help="time ziggurat and onnxruntime in the same run")
    b.add_argument(
        "model",
        help="an .onnx file, zoo:NAME (zoo:resnet18, zoo:small-cnn, ...), or a directory of "
        ".onnx files (a table of ratios at 1 and 2 threads)",
    )
    b.add_argument(
        "--threads", type=int, default=1, help="threads for ziggurat and for onnxruntime (intra-op)"
    )
    b.add_argument(
        "--seconds", type=_positive_seconds, default=1.0, help="minimum timing time per engine"
    )
    b.add_argument("--json", action="store_true")
    b.add_argument("--target", default="cpu", choices=TARGETS, help="where ziggurat runs the model")
    b.add_argument(
        "--db", help="apply the best schedules recorded by `ziggurat tune` in this database"
    )
    b.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=20,
        metavar="N",
        help="also time every kernel call in the running model (cycle counter, CPU target) "
        "and print the N slowest (default 20; 0: all) and the time per kind of kernel",
    )
    b.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="the convolutions' data layout on the CPU: NCHW[b]c blocks of b channels (auto: the "
        "vector width) or NCHW as imported; default: the one `ziggurat tune` recorded in --db, "
        "else auto",
    )
    b.set_defaults(fn=cmd_bench)

    t = sub.add_parser(
        "tune",
        help="tune the model's kernels on this machine (or dask workers: --dask), recording to a database",
    )
    t.add_argument("model", help="an .onnx file or zoo:NAME")
    t.add_argument(
        "--trials", type=int, required=True, help="measurements in total, spread over the tasks"
    )
    t.add_argument(
        "--db", required=True, help="JSON-lines database (appended to; tuning resumes from it)"
    )
    t.add_argument(
        "--target",
        default="cpu",
        choices=["cpu", "opencl", "cuda"],
        help="measure on this CPU, an OpenCL device or a CUDA GPU",
    )
    t.add_argument(
        "--preset",
        help="GPU schedule target (opencl-cpu, opencl-gpu, cuda; default: the device's kind)",
    )
    t.add_argument("--seed", type=_non_negative_int, default=0)
    t.add_argument(
        "--threads",
        type=int,
        default=1,
        help="tune for (and measure on) this many threads: adds the parallel knob",
    )
    t.add_argument(
        "--transfer",
        action="store_true",
        help="seed each task's cost model with the other tasks' records",
    )
    t.add_argument("--tuner", choices=["xgb", "random"], default="xgb")
    t.add_argument(
        "--layout",
        choices=["search", *LAYOUTS],
        default="search",
        help="the convolutions' data layout the kernels are tuned in (CPU): search (default) "
        "times the model in NCHW and in blocks of a full and a half vector first, records the "
        "times in --db and tunes the fastest",
    )
    t.add_argument(
        "--plot", metavar="FILE.png", help="draw best-so-far GFLOP/s against trials per task"
    )
    t.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="measure on the workers of this dask scheduler (tls://HOST:8786 with the --dask-tls-* "
        "files, or tcp://127.0.0.1:8786) instead of here",
    )
    t.add_argument(
        "--dask-tls-ca", metavar="CA.pem", help="the cluster's CA certificate (signs every peer's)"
    )
    t.add_argument(
        "--dask-tls-cert", metavar="CERT.pem", help="this client's certificate, signed by that CA"
    )
    t.add_argument(
        "--dask-tls-key", metavar="KEY.pem", help="its private key (unless in the certificate file)"
    )
    t.add_argument(
        "--dask-insecure",
        action="store_true",
        help="accept an unencrypted tcp:// scheduler on another machine (anyone who reaches it "
        "runs code on the workers and can forge measurements)",
    )
    t.set_defaults(fn=cmd_tune)

    d = sub.add_parser("demo", help="compile and run a built-in model, compare with onnxruntime")
    d.add_argument("--seed", type=_non_negative_int, default=0)
    d.add_argument(
        "--trials",
        type=_non_negative_int,
        default=32,
        help="tuning measurements (0: default schedules only)",
    )
    d.add_argument(
        "--db", help="keep the tuning records in this database (default: a temporary one)"
    )
    d.set_defaults(fn=cmd_demo)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. ignored database records) as one `ziggurat: warning:` line, no source dump."""
    print(f"ziggurat: warning: {message}", file=sys.stderr)


def _runs_a_package(args: argparse.Namespace) -> bool:
    """`ziggurat run X.zpkg`: the one command that needs neither xDSL nor the passes."""
    return args.fn is cmd_run and str(args.model).endswith(PACKAGE_SUFFIX)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _show_warning
    args = build_parser().parse_args(argv)
    if not _runs_a_package(args):  # a package runs without xDSL (compiler/package/)
        from compiler import xdsl_workarounds  # noqa: F401 - patches xDSL's printer on import
    from compiler.errors import ZigguratError
    from compiler.frontend.errors import FrontendError

    try:
        return args.fn(args)
    except (ZigguratError, FrontendError, UsageError) as e:
        print(f"ziggurat: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # tuning records are already on disk: say so, no traceback
        print(
            "ziggurat: interrupted (every measurement made so far is in the database)",
            file=sys.stderr,
        )
        return 130
    except Exception as e:  # an internal error: one line, the traceback only on request
        if os.environ.get("ZIGGURAT_TRACEBACK"):
            raise
        print(
            f"ziggurat: internal error: {type(e).__name__}: {e} (set ZIGGURAT_TRACEBACK=1 for details)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
