"""`ziggurat-opt`: an mlir-opt style driver over xDSL with ziggurat's dialects and passes.

It subclasses xDSL's `xDSLOptMain` for registration (every xDSL dialect, pass and target,
then ours from every layer, compiler/cli/universe.py, which win on name clashes) and replaces the run loop to get
mlir-opt behaviour xdsl-opt lacks: named pipelines, IR dumps and timing on stderr, op-located
diagnostics, `--verify-diagnostics` with `expected-error@+N`, reproducers, and one-line errors
(exit code 1) instead of Python tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import io
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils import diagnostic as xdsl_diagnostic
from xdsl.utils.arg_spec import ArgSpec, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from compiler import registry, xdsl_workarounds  # noqa: F401 - patches xDSL's parser on import
from compiler.cli import universe
from compiler.cli.fail_pass import TestFailPass
from compiler.cli.opt_flags import add_driver_flags
from compiler.diagnostics import (
    Diag,
    OpError,
    diag_from_exception,
    line_col,
    parse_error_diag,
    remember_diagnostic_ops,
    verify_module,
)
from compiler.expected_diagnostics import check_expectations, parse_expectations
from compiler.instrumentation import (
    Instrumentation,
    PassFailure,
    extract_reproducer,
    write_reproducer,
)
from compiler.locating_parser import LocatingParser
from compiler.pass_runner import PASS_INPUT_ERRORS, pass_input_error, run_pipeline
from compiler.pipelines import PIPELINES, PipelineError, expand

PROG = "ziggurat-opt"
_PASS_INPUT_FAILURES: tuple[type[Exception], ...] = (*PASS_INPUT_ERRORS, RecursionError)
"""A pass's exceptions that are the input's fault: what it does not handle, and IR nested deeper
than it recurses."""
_TOO_DEEP = (
    "nesting too deep: regions, attributes or types nested deeper than the parser can follow "
    "(Python's recursion limit)"
)
_SPLIT_RE = re.compile(r"^[ \t]*// -----[ \t]*\r?\n?", re.MULTILINE)


class DriverError(Exception):
    """A user-facing error: printed as one line, exit code 1."""


# -- the driver --------------------------------------------------------------------------


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting with code 2 (mlir-opt exits 1)."""

    def error(self, message: str) -> NoReturn:
        raise DriverError(message)


def _close(name: str, candidates: Sequence[str]) -> str:
    matches = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(f"'{m}'" for m in matches) + "?)"


def _empty_post_init(self: Attribute) -> None:
    """Replaces attribute verification under --disable-verify (as xdsl-opt does)."""


_FLAG_HELP = {
    "verify_diagnostics": "check the diagnostics against the input's `// expected-error"
    "@+N {{message}}` (and -warning, -remark) comments, as mlir-opt does: exit 0 when each "
    "expected one was reported and no other, else 1 listing the differences",
    "parsing_diagnostics": "print parse errors to standard output and exit 0 (for tests of "
    "the parser's messages)",
}
"""Help of xDSL's flags whose meaning ZigguratOptMain.run changes."""


class ZigguratOptMain(xDSLOptMain):
    """xdsl-opt plus ziggurat's registry and mlir-opt's diagnostics, dumps and reproducers."""

    version_format = "ziggurat-opt built from xdsl version {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None) -> None:
        # Same steps as xDSLOptMain.__init__, with an argparse that does not exit(2) and
        # without building the pipeline yet (--run-reproducer reads it from the input).
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = Context()
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()

        parser = _ArgumentParser(
            prog=PROG,
            description="ziggurat modular optimizer driver (mlir-opt style)",
        )
        self.register_all_arguments(parser)
        self.args = parser.parse_args(args=args)
        target = parse_spec(self.args.target)
        if target.name not in self.available_targets:
            raise DriverError(
                f"unknown target '{target.name}'{_close(target.name, list(self.available_targets))}"
            )
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.disable_verify:
            Attribute.__post_init__ = _empty_post_init  # type: ignore[method-assign]
        if self.args.syntax_highlight:
            xdsl_diagnostic.Diagnostic.colored = True

    # -- registration ----------------------------------------------------------------------

    def register_all_dialects(self) -> None:
        for name, factory in Universe.get_multiverse().all_dialects.items():
            # llvm.extractelement & co. (xDSL lacks them): LLVM-level output must re-parse
            self.ctx.register_dialect(
                name, registry.llvm_with_extras if name == "llvm" else factory
            )
        for name, factory in registry.dialect_factories().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in universe.pass_factories().items():
            self.register_pass(name, factory)
        self.register_pass(TestFailPass.name, lambda: TestFailPass)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        from compiler.backends.gpu.targets import TARGETS

        for name, target in TARGETS.items():
            # a factory without parameters (xDSL looks at the signature)
            self.available_targets[name] = (lambda t: lambda: t)(target)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_driver_flags(arg_parser)
        # xDSL's help describes its own behaviour of these flags; run() gives them mlir-opt's.
        for action in arg_parser._actions:
            if action.dest in _FLAG_HELP:
                action.help = _FLAG_HELP[action.dest]

    # -- pipeline --------------------------------------------------------------------------

    def _pass_names(self) -> list[str]:
        return sorted(self.available_passes)

    def _load_pass(self, name: str) -> type[ModulePass]:
        if name not in self.available_passes:
            raise DriverError(
                f"unknown pass '{name}'{_close(name, self._pass_names() + list(PIPELINES))}"
            )
        try:
            return self.available_passes[name]()
        except Exception as e:
            raise DriverError(
                f"pass '{name}' is registered but could not be loaded: {type(e).__name__}: {e}"
            ) from e

    def _instantiate(self, spec: ArgSpec) -> ModulePass:
        cls = self._load_pass(spec.name)
        fields = {f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"}
        for option in spec.parameters:
            if option.replace("-", "_") not in fields:
                valid = ", ".join(sorted(f.replace("_", "-") for f in fields)) or "none"
                hint = _close(option.replace("_", "-"), [f.replace("_", "-") for f in fields])
                raise DriverError(
                    f"unknown option '{option}' for pass '{spec.name}'{hint} "
                    f"(valid options: {valid})"
                )
        try:
            return cls.from_pass_spec(spec)
        except (ValueError, TypeError) as e:
            raise DriverError(f"invalid options for pass '{spec.name}' ({spec}): {e}") from e

    def build_pipeline(self, text: str) -> tuple[ModulePass, ...]:
        """`-p` text -> pass instances, with named pipelines expanded."""
        try:
            specs = expand(text)
        except ArgSpecParseError as e:
            raise DriverError(f"invalid pass pipeline '{text}': {e}") from None
        except PipelineError as e:
            raise DriverError(str(e)) from None
        return tuple(self._instantiate(s) for s in specs)

    def _pass_name_set(self, values: list[str], flag: str) -> frozenset[str]:
        names = {n.strip() for v in values for n in v.split(",") if n.strip()}
        for n in names:
            if n not in self.available_passes:
                raise DriverError(f"unknown pass '{n}' in {flag}{_close(n, self._pass_names())}")
        return frozenset(names)

    # -- input -----------------------------------------------------------------------------

    def _read_input(self) -> str:
        path = self.args.input_file
        try:
            if path is None or path == "-":
                data = sys.stdin.buffer.read()
            else:
                with open(path, "rb") as f:
                    data = f.read()
        except OSError as e:
            raise DriverError(f"could not open input file '{path}': {e.strerror}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DriverError(f"input file '{path}' is not UTF-8 text: {e}") from None

    def _chunks(self, text: str) -> list[str]:
        """Split on `// -----` lines; each chunk is padded with newlines so that its line
        numbers (in diagnostics and op locations) are those of the original file."""
        if not self.args.split_input_file:
            return [text]
        chunks: list[str] = []
        start = 0
        for m in _SPLIT_RE.finditer(text):
            chunks.append("\n" * text.count("\n", 0, start) + text[start : m.start()])
            start = m.end()
        chunks.append("\n" * text.count("\n", 0, start) + text[start:])
        return chunks

    def _parse(self, chunk: str, name: str) -> ModuleOp:
        parser = LocatingParser(self.ctx, chunk, name)
        try:
            module = parser.parse_module(not self.args.no_implicit_module)
        except (ParseError, OpError):
            raise
        except DiagnosticException as e:
            # e.g. an attribute verifier failing while the parser builds it
            pos = parser.current_position()
            line, col = line_col(chunk, pos)
            raise _Located(Diag("error", str(e).strip(), file=name, line=line, col=col)) from e
        except RecursionError as e:
            # xDSL's parser recurses once per nesting level of regions, attributes and types
            pos = parser.current_position()
            line, col = line_col(chunk, pos)
            raise _Located(Diag("error", _TOO_DEEP, file=name, line=line, col=col)) from e
        except (AssertionError, ValueError, TypeError, IndexError, KeyError, OverflowError) as e:
            # xDSL's parser asserts or fails inside on some malformed input (e.g. an unclosed
            # complex number in a dense literal): still the input's fault, at this position
            pos = parser.current_position()
            line, col = line_col(chunk, pos)
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            msg = f"malformed input: the parser failed here ({why})"
            raise _Located(Diag("error", msg, file=name, line=line, col=col)) from e
        parser.assign_locations()
        return module

    # -- run -------------------------------------------------------------------------------

    def run(self) -> int:
        """Process every input chunk; returns the exit code."""
        args = self.args
        if args.list_passes:
            self._list_passes()
            return 0
        name = args.input_file if args.input_file not in (None, "-") else "<stdin>"
        raw = self._read_input()
        text, stored_pipeline = extract_reproducer(raw)
        pipeline_text = args.passes
        if args.run_reproducer:
            if stored_pipeline is None:
                raise DriverError(f"'{name}' holds no reproducer pipeline (mlir_reproducer)")
            if args.passes:
                raise DriverError("--run-reproducer takes its pipeline from the input; drop -p")
            pipeline_text = stored_pipeline
        if args.print_between_passes:
            args.print_ir_after_all = True
        passes = self.build_pipeline(pipeline_text)
        before = self._pass_name_set(args.print_ir_before, "--print-ir-before")
        after = self._pass_name_set(args.print_ir_after, "--print-ir-after")
        instr = Instrumentation(
            stream=sys.stderr,
            print_before=before,
            print_after=after,
            print_before_all=args.print_ir_before_all,
            print_after_all=args.print_ir_after_all,
            print_after_change=args.print_ir_after_change,
            print_generic=args.print_op_generic,
            timing=args.timing or args.time_passes,
            statistics=args.pass_statistics,
            keep_input=args.reproducer is not None,
            verify=None if args.disable_verify else verify_module,
        )
        self.pipeline = PassPipeline(passes, instr)  # xDSLOptMain's field; run by run_pipeline

        source = {name: text.splitlines()}
        diags: list[Diag] = []
        verify_mode = args.verify_diagnostics

        def report(d: Diag) -> None:
            diags.append(d)
            if not verify_mode:
                print(
                    d.render(source),
                    file=sys.stderr if not args.parsing_diagnostics else sys.stdout,
                )

        try:
            out = sys.stdout if args.output_file is None else open(args.output_file, "w")
        except OSError as e:
            raise DriverError(
                f"could not open output file '{args.output_file}': {e.strerror}"
            ) from None
        where = (
            "to standard output"
            if args.output_file is None
            else f"output file '{args.output_file}'"
        )

        def emit(text: str) -> None:
            """Write and flush: a full disk (/dev/full) or a closed file is a user error naming
            the file; a broken pipe (`| head`) is normal use, main() ends quietly on it."""
            try:
                out.write(text)
                out.flush()
            except BrokenPipeError:
                raise
            except OSError as e:
                raise _OutputError(
                    f"could not write {where}: {e.strerror or e}", stdout=out is sys.stdout
                ) from None

        try:
            with remember_diagnostic_ops():
                for i, chunk in enumerate(self._chunks(text)):
                    if i > 0:
                        emit("// -----\n")
                    result = self._run_chunk(chunk, name, instr, report)
                    if result is not None:
                        with instr.phase("Output"):
                            try:
                                printed = self.output_resulting_program(result)
                            except RecursionError:
                                raise DriverError(
                                    "the result is nested too deeply to print "
                                    "(Python's recursion limit)"
                                ) from None
                            emit(printed)
        finally:
            if out is not sys.stdout:
                with contextlib.suppress(OSError):  # a failed write was reported already
                    out.close()
        instr.report()

        if verify_mode:
            expected = parse_expectations(source[name])
            errors = check_expectations(diags, expected, name, source)
            for err in errors:
                print(err, file=sys.stderr)
            return 1 if errors else 0
        if args.parsing_diagnostics:
            return 0
        return 1 if any(d.severity == "error" for d in diags) else 0

    def _run_chunk(
        self, chunk: str, name: str, instr: Instrumentation, report: Callable[[Diag], None]
    ) -> ModuleOp | None:
        """Parse, verify and transform one chunk; diagnostics go to `report`."""
        args = self.args
        ext = os.path.splitext(args.input_file or "")[1].lstrip(".")
        try:
            with instr.phase("Parser"):
                if ext and ext != "mlir" and ext in self.available_frontends:
                    module = self.available_frontends[ext](io.BytesIO(chunk.encode("utf-8")))
                else:
                    module = self._parse(chunk, name)
        except ParseError as e:
            report(parse_error_diag(e, chunk, name))
            return None
        except _Located as e:
            report(e.diag)
            return None
        except Exception as e:
            raise _Internal("while parsing", e) from e

        if not args.disable_verify:
            try:
                with instr.phase("Verifier"):
                    verify_module(module)
            except (OpError, DiagnosticException) as e:
                report(diag_from_exception(e, name))
                return None
            except RecursionError:
                report(Diag("error", "the module is nested too deeply to verify", file=name))
                return None

        instr.begin(self.pipeline.passes)
        try:
            run_pipeline(self.ctx, module, self.pipeline.passes, instr)
        except (OpError, DiagnosticException) as e:
            failure = instr.failure()
            broke = failure is not None and failure.after_pass
            what = "produced IR that does not verify" if broke else "failed"
            self._report_failure(diag_from_exception(e, name), failure, what, report)
            return None
        except _PASS_INPUT_FAILURES as e:
            # input the pass does not handle (another level, an unsupported construct), or IR
            # nested deeper than it recurses: the input's fault, one error naming the pass
            failure = instr.failure()
            where = failure.pass_.name if failure is not None else "?"
            if isinstance(e, RecursionError):
                message = f"pass '{where}': the IR is nested too deeply (Python's recursion limit)"
            else:
                message = pass_input_error(where, e)
            self._report_failure(Diag("error", message, file=name), failure, "failed", report)
            return None
        except Exception as e:
            failure = instr.failure()
            if failure is not None:
                self._maybe_reproduce(failure, f"internal error: {type(e).__name__}: {e}")
                raise _Internal(f"in pass '{failure.pass_.name}'", e) from e
            raise _Internal("while running the pipeline", e) from e
        return module

    def _report_failure(
        self, d: Diag, failure: PassFailure | None, what: str, report: Callable[[Diag], None]
    ) -> None:
        """Report `d` from a failed pipeline: with a note that the pass `what` (failed, ...)
        where one is to blame, and its --reproducer written."""
        if failure is not None:
            d.notes.append(f"note: pass '{failure.pass_.name}' {what}")
        report(d)
        if failure is not None:
            self._maybe_reproduce(failure, d.render({}))

    def _maybe_reproduce(self, failure: PassFailure, reason: str) -> None:
        path = self.args.reproducer
        if path is None:
            return
        try:
            replay = write_reproducer(path, failure, reason)
        except OSError as e:
            print(f"{PROG}: could not write reproducer '{path}': {e.strerror}", file=sys.stderr)
            return
        print(f"{PROG}: reproducer written to {path}", file=sys.stderr)
        print(f"{PROG}: replay with: {replay}", file=sys.stderr)

    def _list_passes(self) -> None:
        print("Passes:")
        for n in self._pass_names():
            print(f"  {n}")
        print("Named pipelines:")
        for n, p in sorted(PIPELINES.items()):
            print(f"  {n} = {p}")


class _OutputError(DriverError):
    """Writing the output failed; on standard output, what is still buffered is dropped."""

    def __init__(self, message: str, stdout: bool) -> None:
        super().__init__(message)
        self.stdout = stdout


class _Located(Exception):
    """A parse-time failure already turned into a diagnostic."""

    def __init__(self, diag: Diag) -> None:
        super().__init__(diag.message)
        self.diag = diag


class _Internal(Exception):
    """An unexpected Python exception (a bug, not a user error)."""

    def __init__(self, where: str, cause: BaseException) -> None:
        super().__init__(f"{where}: {type(cause).__name__}: {cause}")
        self.cause = cause


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: never lets a Python traceback reach the user (unless asked)."""
    show_tb = "--traceback" in (sys.argv[1:] if argv is None else argv)
    try:
        return ZigguratOptMain(args=argv).run()
    except DriverError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        if isinstance(e, _OutputError) and e.stdout:
            _drop_stdout()  # else flushing it again at exit fails once more, with a traceback
    except _Internal as e:
        print(f"{PROG}: internal error {e}", file=sys.stderr)
        _hint(show_tb, e.cause)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except (Exception, ArgSpecParseError) as e:
        print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        _hint(show_tb, e)
    return 1


def _drop_stdout() -> None:
    """Point sys.stdout at /dev/null: the interpreter's flush at exit has nowhere to fail."""
    with contextlib.suppress(Exception):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit


def _hint(show_tb: bool, cause: BaseException) -> None:
    if show_tb:
        traceback.print_exception(cause, file=sys.stderr)
    else:
        print(
            f"{PROG}: this is a bug; rerun with --reproducer FILE to save the failing "
            "input, or --traceback for details",
            file=sys.stderr,
        )


if __name__ == "__main__":
    sys.exit(main())
