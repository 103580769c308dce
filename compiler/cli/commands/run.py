"""`ziggurat run`: a model (an .onnx file, zoo:NAME, or a compiled .zpkg package) on the inputs
of an .npz file, its outputs to another."""

from __future__ import annotations

import argparse

from compiler.cli.commands.options import (
    add_db,
    add_input_shape,
    add_layout,
    conv_layout,
    db_schedules,
    report_db_use,
)
from compiler.cli.common import (
    PACKAGE_SUFFIX,
    TARGETS,
    UsageError,
    check_threads,
    load_npz,
    model_arg,
    parse_dims,
    parse_input_shapes,
    progress_on_terminal,
    save_outputs,
)


def _run_package(args: argparse.Namespace) -> int:
    """`run X.zpkg`: the package's code through the lean runtime (compiler/package/: neither
    the passes nor ONNX are imported). It holds compiled code: compile options do not apply."""
    from compiler.package import load_package

    for flag, given in (
        ("--input-shape", args.input_shape),
        ("--dim", args.dim),
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
    save_outputs(model.run(load_npz(args.inputs)), args.output)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.model.endswith(PACKAGE_SUFFIX):
        return _run_package(args)
    args.target = args.target or "cpu"
    from compiler.compile_cache import model_notes
    from compiler.symbolic_model import compile_symbolic

    args.threads = 1 if args.threads is None else args.threads
    check_threads(args.threads)
    source = model_arg(args.model)  # a path or zoo:NAME, as compile, bench and tune take
    feeds = load_npz(args.inputs)
    # symbolic dims take their sizes from the inputs (checked against --dim bounds); each
    # binding is one compile, through the compile cache: the second run of a shape is a load
    symbolic = compile_symbolic(
        source,
        parse_dims(args.dim),
        parse_input_shapes(args.input_shape),
        target=args.target,
        optimize=not args.no_graph_opt,
        schedules=db_schedules(args.db, args.threads, args.target),
        threads=args.threads,
        layout=conv_layout(args, source),
        cache=not args.no_cache,
    )
    with progress_on_terminal():
        model = symbolic.for_feeds(feeds)  # a wrong input is reported before the compile
    if args.db:
        report_db_use(model_notes(model))
    save_outputs(model.run(feeds), args.output)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    r = subparsers.add_parser("run", help="run a model on inputs from an .npz file")
    r.add_argument("model", help=f"an .onnx file, or a {PACKAGE_SUFFIX} package")
    r.add_argument("--inputs", required=True)
    r.add_argument("--output", required=True)
    r.add_argument(
        "--target",
        choices=TARGETS,
        help="this CPU (default), an OpenCL device (ZIGGURAT_OPENCL_DEVICE=P:D picks one), a CUDA "
        "GPU; for a package: refuse one compiled for another target",
    )
    add_input_shape(r)
    r.add_argument("--no-graph-opt", action="store_true", help="skip folding and fusion")
    add_db(r)
    r.add_argument(
        "--threads",
        type=int,
        help="threads for the kernels' parallel loops (default: 1; a package's: as it was saved)",
    )
    add_layout(r)
    r.add_argument(
        "--no-cache",
        action="store_true",
        help="compile afresh, neither reading nor filling the compile cache (as does "
        "ZIGGURAT_NO_CACHE=1; the cache: ZIGGURAT_CACHE_DIR, default ~/.cache/ziggurat)",
    )
    r.set_defaults(fn=cmd_run)
