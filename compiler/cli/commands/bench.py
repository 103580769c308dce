"""`ziggurat bench`: ziggurat and onnxruntime timed in the same run, on one model (optionally
with every kernel call profiled) or on a directory of models (a table of ratios)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.cli.commands.options import (
    add_db,
    add_layout,
    conv_layout,
    db_schedules,
    report_db_use,
)
from compiler.cli.common import (
    TARGETS,
    UsageError,
    check_threads,
    model_arg,
    positive_seconds,
    progress_on_terminal,
    write_stdout,
)

if TYPE_CHECKING:
    from xdsl.ir import Attribute


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
            "schedules": db_schedules(args.db, t, args.target),
            "layout": conv_layout(args, model_arg(str(path)), t),
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
        write_stdout(json.dumps(rows) + "\n")
    else:
        write_stdout(directory_table(rows, threads) + "\n")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    check_threads(args.threads)
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
    model = model_arg(args.model)
    layout = conv_layout(args, model)
    with progress_on_terminal():
        result = bench_model(
            model,
            args.threads,
            args.seconds,
            schedules=db_schedules(args.db, args.threads, args.target),
            notes=notes,
            target=args.target,
            layout=layout,
        )
    if args.db:
        report_db_use(notes)
    if args.profile is not None:
        result["profile"] = _profile(args, layout)
    if args.json:
        write_stdout(json.dumps(result) + "\n")
    else:
        write_stdout(
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
            write_stdout(result["profile"]["table"] + "\n")
    return 0


def _profile(args: argparse.Namespace, layout: str) -> dict[str, Any]:
    """`bench --profile`: the model compiled again with its kernel calls timed, run for
    --seconds; rows in call order (the JSON) and a table of the slowest."""
    from compiler.profile import profile_model

    profile = profile_model(
        model_arg(args.model),
        threads=args.threads,
        seconds=args.seconds,
        schedules=db_schedules(args.db, args.threads, args.target),
        layout=layout,
    )
    return {
        "total_ms": round(profile.total_s * 1e3, 4),
        "runs": profile.runs,
        "fma_peak_gflops": round(profile.peak_flops / 1e9, 2) if profile.peak_flops else None,
        "kernels": [
            {"kernel": r.kernel, "what": r.what, "ms": round(r.seconds * 1e3, 4), "flops": r.flops}
            for r in profile.rows
        ],
        "table": profile.table(args.profile or None),
    }


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    b = subparsers.add_parser("bench", help="time ziggurat and onnxruntime in the same run")
    b.add_argument(
        "model",
        help="an .onnx file, zoo:NAME (zoo:resnet18, zoo:small-cnn, ...), or a directory of "
        ".onnx files (a table of ratios at 1 and 2 threads)",
    )
    b.add_argument(
        "--threads", type=int, default=1, help="threads for ziggurat and for onnxruntime (intra-op)"
    )
    b.add_argument(
        "--seconds", type=positive_seconds, default=1.0, help="minimum timing time per engine"
    )
    b.add_argument("--json", action="store_true")
    b.add_argument("--target", default="cpu", choices=TARGETS, help="where ziggurat runs the model")
    add_db(b)
    b.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=20,
        metavar="N",
        help="also time every kernel call in the running model (cycle counter, CPU target) "
        "and print the N slowest (default 20; 0: all) and the time per kind of kernel",
    )
    add_layout(b)
    b.set_defaults(fn=cmd_bench)
