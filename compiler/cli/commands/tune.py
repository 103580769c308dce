"""`ziggurat tune`: the model's kernels tuned on this machine (or on dask workers), every
measurement recorded to a JSON-lines database that compile, run and bench read with `--db`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.cli.commands.options import gpu_layout
from compiler.cli.common import UsageError, check_threads, model_arg, non_negative_int
from compiler.levels import LAYOUTS


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

    check_threads(args.threads)
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
    model = model_arg(args.model)
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
        return gpu_layout(args.layout)
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


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
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
    t.add_argument("--seed", type=non_negative_int, default=0)
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
    for flag, metavar, text in (
        ("--dask-tls-ca", "CA.pem", "the cluster's CA certificate (signs every peer's)"),
        ("--dask-tls-cert", "CERT.pem", "this client's certificate, signed by that CA"),
        ("--dask-tls-key", "KEY.pem", "its private key (unless in the certificate file)"),
    ):
        t.add_argument(flag, metavar=metavar, help=text)
    t.add_argument(
        "--dask-insecure",
        action="store_true",
        help="accept an unencrypted tcp:// scheduler on another machine (anyone who reaches it "
        "runs code on the workers and can forge measurements)",
    )
    t.set_defaults(fn=cmd_tune)
