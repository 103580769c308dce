"""The options several verbs share: the tuning database's schedules (`--db`), the
convolutions' layout (`--layout`) and the input shapes, as flags and as what they resolve to."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from compiler.cli.common import UsageError
from compiler.levels import LAYOUTS

if TYPE_CHECKING:
    from xdsl.ir import Attribute
    from xdsl.passes import ModulePass


def add_input_shape(parser: argparse.ArgumentParser) -> None:
    """`--input-shape NAME=1x3x224x224`, repeatable (common.parse_input_shapes reads them)."""
    parser.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224")
    parser.add_argument(
        "--dim",
        action="append",
        metavar="SYMBOL=N|LO..HI",
        help="a symbolic dimension of the model's inputs (an ONNX dim_param such as seq): "
        "fixed to N, or bounded to LO..HI (run: the inputs' sizes are checked against it)",
    )


def fixed_input_shapes(args: argparse.Namespace, source: Any) -> dict[str, list[int]]:
    """--input-shape with the shapes that --dim SYMBOL=N fixes added (one static compile:
    a range is refused)."""
    from compiler.cli.common import parse_dims, parse_input_shapes

    shapes = parse_input_shapes(args.input_shape)
    dims = parse_dims(args.dim)
    ranges = [k for k, v in dims.items() if isinstance(v, tuple)]
    if ranges:
        raise UsageError(
            f"--dim {ranges[0]}=LO..HI: this compiles one shape; fix it with --dim "
            f"{ranges[0]}=N (ranges are for `ziggurat run` and compile_symbolic)"
        )
    if not dims:
        return shapes
    from compiler.symbolic_model import SymbolicModel

    return {**SymbolicModel(source, dims, shapes).fixed_shapes(), **shapes}


def add_db(parser: argparse.ArgumentParser) -> None:
    """`--db`: the schedules `ziggurat tune` recorded, applied."""
    parser.add_argument(
        "--db", help="apply the best schedules recorded by `ziggurat tune` in this database"
    )


def add_layout(parser: argparse.ArgumentParser) -> None:
    """`--layout`: the convolutions' layout on the CPU (conv_layout resolves it)."""
    parser.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="the convolutions' data layout on the CPU: NCHW[b]c blocks of b channels (auto: the "
        "vector width) or NCHW as imported; default: the one `ziggurat tune` recorded in --db, "
        "else auto",
    )


def db_schedules(db: str | None, threads: int, target: str = "cpu") -> list[ModulePass]:
    """The kernels' schedules from a tuning database (`--db`), applied by the tuner's pass: for
    a GPU target, the records of the preset its device gets, measured on that device."""
    from autotune.apply_pass import tuned_schedules

    if not db or target == "cpu":
        return tuned_schedules(db, threads)
    from compiler.backends.gpu.compile import check_available, preset_for

    check_available(target)  # the preset is the device's kind
    return tuned_schedules(db, target=target, preset=preset_for(target))


def gpu_layout(layout: str | None) -> str:
    """A GPU's layout, NCHW: a --layout that asks for a blocked one is a usage error."""
    if layout not in (None, "search", "auto", "NCHW"):
        raise UsageError(f"--layout {layout} is for the CPU; GPU kernels read NCHW")
    return "NCHW"


def conv_layout(args: argparse.Namespace, model: Any, threads: int | None = None) -> str:
    """The convolutions' layout: --layout, else the one `ziggurat tune` chose and recorded in
    --db for this model on this CPU at `threads` (default --threads), else the default (auto);
    a GPU's: NCHW."""
    if getattr(args, "target", "cpu") != "cpu":
        return gpu_layout(args.layout)
    if args.layout:
        return args.layout
    if args.db:
        from autotune.layout_choice import tuned_layout

        chosen = tuned_layout(args.db, model, threads or args.threads)
        if chosen is not None:
            print(f"ziggurat: layout {chosen}, as tuned in {args.db}", file=sys.stderr)
            return chosen
    return "auto"


def report_db_use(notes: dict[str, Attribute]) -> None:
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
