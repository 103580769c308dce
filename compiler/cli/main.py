"""`ziggurat`: compile, run, benchmark and demo ONNX models from the command line.

Every user error ends in one `ziggurat: error: ...` line and exit code 1, never a traceback.
This is the entry: the parser, the dispatch and the error handling; each verb (its flags and
its work) is a module of compiler/cli/commands/, what they share is compiler/cli/common.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from compiler.cli.commands import bench, demo, generate, run, shapes, tune
from compiler.cli.commands import compile as compile_verb
from compiler.cli.common import PACKAGE_SUFFIX, UsageError

VERBS = (compile_verb, run, bench, tune, generate, shapes, demo)
"""The verbs, in the order `ziggurat --help` lists them."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors exit with 1 like every other user error (argparse uses 2)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog="ziggurat", description="ziggurat: compile ONNX models to machine code"
    )
    sub = p.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.add_parser(sub)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. ignored database records) as one `ziggurat: warning:` line, no source dump."""
    print(f"ziggurat: warning: {message}", file=sys.stderr)


def _runs_a_package(args: argparse.Namespace) -> bool:
    """`ziggurat run X.zpkg`: the one command that needs neither xDSL nor the passes."""
    return args.fn is run.cmd_run and str(args.model).endswith(PACKAGE_SUFFIX)


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
