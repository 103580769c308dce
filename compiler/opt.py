"""`ziggurat-opt`: an mlir-opt style driver over xDSL with ziggurat's dialects and passes.

It subclasses xDSL's `xDSLOptMain` for registration (every xDSL dialect, pass and target,
then ours from `compiler.registry`, which win on name clashes) and replaces the run loop to get
mlir-opt behaviour xdsl-opt lacks: named pipelines, IR dumps and timing on stderr, op-located
diagnostics, `--verify-diagnostics` with `expected-error@+N`, reproducers, and one-line errors
(exit code 1) instead of Python tracebacks.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import difflib
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils import diagnostic as xdsl_diagnostic
from xdsl.utils.arg_spec import ArgSpec, parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
    PassFailedException,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from compiler import registry, xdsl_workarounds  # noqa: F401 - patches xDSL's parser on import
from compiler.instrumentation import (
    Instrumentation,
    PassFailure,
    extract_reproducer,
    write_reproducer,
)
from compiler.pipelines import PIPELINES, PipelineError, expand

PROG = "ziggurat-opt"
_SPLIT_RE = re.compile(r"^[ \t]*// -----[ \t]*\r?\n?", re.MULTILINE)


class DriverError(Exception):
    """A user-facing error: printed as one line, exit code 1."""


# -- a test-only failing pass (reproducer and diagnostics tests) ---------------------------


@dataclass(frozen=True)
class TestFailPass(ModulePass):
    """Fails on purpose, so driver tests need no real (possibly unfinished) pass.

    mode=error: a located pass error on the first op carrying `test.fail` (else the first op);
    mode=exception: a Python exception (an internal error); mode=invalid-ir: erases the first
    `func.return`, so the verifier rejects the pass's output.
    """

    name = "test-fail-pass"
    mode: str = "error"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ops = [o for o in op.walk() if o is not op]
        if self.mode == "exception":
            raise RuntimeError("test-fail-pass: deliberate internal error")
        if self.mode == "invalid-ir":
            for o in ops:
                if o.name == "func.return":
                    o.detach()
                    o.erase()
                    return
            return
        if self.mode != "error":
            raise PassFailedException(f"test-fail-pass: unknown mode '{self.mode}'")
        target = next((o for o in ops if "test.fail" in o.attributes), ops[0] if ops else op)
        msg = "test-fail-pass: deliberate failure"
        target.emit_error(msg, PassFailedException(msg))


# -- diagnostics -------------------------------------------------------------------------


@dataclass
class Diag:
    """One diagnostic, located in the original input file when possible."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    length: int = 1
    notes: list[str] = field(default_factory=list[str])

    def render(self, source: dict[str, list[str]]) -> str:
        """MLIR style: `file:line:col: error: msg`, the source line, and a caret."""
        if self.line is None or self.file is None:
            where = self.file or "<unknown>"
            head = f"{where}: {self.severity}: {self.message}"
        else:
            head = f"{self.file}:{self.line}:{self.col or 1}: {self.severity}: {self.message}"
        out = [head]
        lines = _source_lines(source, self.file)
        if lines is not None and self.line is not None and 0 < self.line <= len(lines):
            text = lines[self.line - 1].rstrip("\r\n")
            col = max(1, self.col or 1)
            width = max(1, min(self.length, len(text) - col + 1))
            out += [text, " " * (col - 1) + "^" + "~" * (width - 1)]
        out += self.notes
        return "\n".join(out)


def _source_lines(source: dict[str, list[str]], file: str | None) -> list[str] | None:
    """Lines of `file` for caret display, only if it is text already in memory (the input).

    Never opens `file`: it comes from the IR (`loc("path":N:M)`), so reading it would print
    other files (/etc/passwd), hang on a FIFO or exhaust memory on /dev/zero. Diagnostics
    located elsewhere (e.g. the original source named inside a reproducer) get no snippet.
    """
    if file is None:
        return None
    return source.get(file)


class _OpError(Exception):
    """A verifier failure pinned to the operation that failed."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message


@contextlib.contextmanager
def _remember_diagnostic_ops() -> Iterator[None]:
    """Make xDSL's `op.emit_error` record its ops on the exception, to locate the error.

    xDSL attaches emitted messages only as printed IR in `__notes__`; the driver needs the
    op objects themselves to report a `file:line:col`.
    """
    original = xdsl_diagnostic.Diagnostic.raise_exception

    def raise_exception(self: Any, ir: Any, underlying_error: Exception) -> NoReturn:
        with contextlib.suppress(Exception):
            underlying_error._ziggurat_ops = list(self.op_messages.items())  # type: ignore[attr-defined]
        original(self, ir, underlying_error)

    xdsl_diagnostic.Diagnostic.raise_exception = raise_exception  # type: ignore[method-assign]
    try:
        yield
    finally:
        xdsl_diagnostic.Diagnostic.raise_exception = original  # type: ignore[method-assign]


def op_location(op: Operation | None) -> tuple[str, int, int] | None:
    """(file, line, col) of `op`, else of its nearest ancestor that has one."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return loc.filename.data, loc.line.data, loc.column.data
        op = op.parent_op()
    return None


def verify_module(module: ModuleOp) -> None:
    """Verify `module`; on failure, re-verify op by op to name the op (and line) at fault."""
    try:
        module.verify()
        return
    except Exception as e:
        first = e
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise _OpError(op, str(e)) from e
        except Exception as e:  # a verifier tripping over broken IR (e.g. erased values)
            raise _OpError(op, f"{type(e).__name__}: {e}") from e
    raise first  # a block/region invariant the per-op walk does not cover


def _diag_from_exception(exc: BaseException, input_name: str) -> Diag:
    """Turn a verifier or pass exception into a located error where the IR allows."""
    op: Operation | None = None
    message = str(exc).strip() or type(exc).__name__
    if isinstance(exc, _OpError):
        op, message = exc.op, exc.message
    elif ops := getattr(exc, "_ziggurat_ops", None):
        op = ops[0][0]
    elif isinstance(getattr(exc, "op", None), Operation):
        op = exc.op  # type: ignore[attr-defined]
    if op is not None and not message.startswith(f"'{op.name}' op"):
        message = f"'{op.name}' op {message}"
    loc = op_location(op)
    if loc is None:
        return Diag("error", message, file=input_name)
    return Diag("error", message, file=loc[0], line=loc[1], col=loc[2])


# -- --verify-diagnostics ----------------------------------------------------------------

_EXPECT_RE = re.compile(
    r"//.*?expected-(error|warning|remark|note)(-re)?"
    r"(?:\s*@(above|below|unknown|[+-]?\d+))?\s*\{\{(.*)\}\}"
)


@dataclass
class Expectation:
    """One `// expected-<severity>[@where] {{message}}` annotation."""

    severity: str
    pattern: str
    regex: bool
    line: int | None
    """Line the diagnostic is expected on; None for `@unknown`."""
    source_line: int
    matched: bool = False

    def matches(self, d: Diag) -> bool:
        if self.matched or d.severity != self.severity or d.line != self.line:
            return False
        if self.regex:
            return re.search(self.pattern, d.message) is not None
        return self.pattern in d.message


def parse_expectations(lines: list[str]) -> list[Expectation]:
    """Collect the annotations of a whole file (line numbers are the file's)."""
    found: list[tuple[int, re.Match[str]]] = []
    for i, text in enumerate(lines, start=1):
        if m := _EXPECT_RE.search(text):
            found.append((i, m))
    annotated = {i for i, _ in found}

    def is_plain(i: int) -> bool:
        """Lines holding only an annotation are skipped by @above/@below."""
        stripped = lines[i - 1].strip()
        return not (i in annotated and stripped.startswith("//"))

    out: list[Expectation] = []
    for i, m in found:
        severity, re_flag, where, pattern = m.groups()
        line: int | None
        if where is None:
            line = i
        elif where == "unknown":
            line = None
        elif where == "above":
            line = next((j for j in range(i - 1, 0, -1) if is_plain(j)), i - 1)
        elif where == "below":
            line = next((j for j in range(i + 1, len(lines) + 1) if is_plain(j)), i + 1)
        elif where[0] in "+-":
            line = i + int(where)
        else:
            line = int(where)
        out.append(Expectation(severity, pattern, re_flag is not None, line, i))
    return out


def check_expectations(
    diags: list[Diag], expected: list[Expectation], input_name: str, source: dict[str, list[str]]
) -> list[str]:
    """MLIR's verifier: every diagnostic expected, every expectation produced."""
    errors: list[str] = []
    for d in diags:
        if d.severity == "note" and not any(e.severity == "note" for e in expected):
            continue
        hit = next((e for e in expected if e.matches(d)), None)
        if hit is not None:
            hit.matched = True
            continue
        unexpected = dataclasses.replace(d, message=f"unexpected {d.severity}: {d.message}")
        unexpected.severity, unexpected.notes = "error", []
        errors.append(unexpected.render(source))
    for e in expected:
        if not e.matched:
            where = f"line {e.line}" if e.line is not None else "an unknown location"
            errors.append(
                f"{input_name}:{e.source_line}: error: expected {e.severity} "
                f'"{e.pattern}" was not produced (expected on {where})'
            )
    return errors


# -- parsing with locations --------------------------------------------------------------


class LocatingParser(Parser):
    """xDSL's parser, plus a `file:line:col` location on every op it parses.

    xDSL ops parsed without `loc(...)` carry `UnknownLoc`; giving them their source position
    (as MLIR does) lets verifier and pass errors name the line, and survives cloning.
    """

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._starts: list[tuple[Operation, int]] = []

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self._starts.append((op, start))
        return op

    def current_position(self) -> int:
        return self._current_token.span.start

    def assign_locations(self) -> None:
        newlines = [m.start() for m in re.finditer("\n", self._text)]
        filename = StringAttr(self._name)
        for op, start in self._starts:
            if not isinstance(op.location, UnknownLoc):
                continue
            line = bisect.bisect_left(newlines, start)
            col = start - (newlines[line - 1] + 1 if line else 0)
            op.location = FileLineColLoc(filename, IntAttr(line + 1), IntAttr(col + 1))


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - line_start + 1


def _parse_error_diag(e: ParseError, text: str, name: str) -> Diag:
    """A ParseError as an MLIR-style diagnostic, at the most useful position."""
    loc = e.span.get_location()
    line, col = loc.line, loc.col
    msg = e.msg
    if m := re.match(r"values used but not defined: \[(%[^,\]]+)", msg):
        # xDSL reports this at the end of the input; point at the first use instead.
        for use in re.finditer(re.escape(m.group(1)) + r"(?![\w$.\-])", text):
            if "//" in text[text.rfind("\n", 0, use.start()) + 1 : use.start()]:
                continue  # in a comment
            line, col = _line_col(text, use.start())
            msg = f"use of undeclared SSA value name {m.group(1)}"
            break
    d = Diag("error", msg, file=loc.file or name, line=line, col=col, length=max(1, e.span.len))
    if isinstance(e, MultipleSpansParseError):
        for span, note in e.refs:
            rl = span.get_location()
            d.notes.append(f"{rl.file}:{rl.line}:{rl.col}: note: {note or ''}".rstrip())
    return d


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
        from xdsl.universe import Universe

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
        for name, factory in registry.pass_factories().items():
            self.register_pass(name, factory)
        self.register_pass(TestFailPass.name, lambda: TestFailPass)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add = arg_parser.add_argument
        add(
            "--print-ir-before",
            "--mlir-print-ir-before",
            metavar="PASS[,PASS]",
            action="append",
            default=[],
            help="print the IR (to stderr) before each run of the named passes",
        )
        add(
            "--print-ir-after",
            "--mlir-print-ir-after",
            metavar="PASS[,PASS]",
            action="append",
            default=[],
            help="print the IR (to stderr) after each run of the named passes",
        )
        add(
            "--print-ir-before-all",
            "--mlir-print-ir-before-all",
            action="store_true",
            help="print the IR (to stderr) before every pass",
        )
        add(
            "--print-ir-after-all",
            "--mlir-print-ir-after-all",
            action="store_true",
            help="print the IR (to stderr) after every pass",
        )
        add(
            "--print-ir-after-change",
            "--mlir-print-ir-after-change",
            action="store_true",
            help="print the IR (to stderr) after every pass that changed it",
        )
        add(
            "--timing",
            "--mlir-timing",
            action="store_true",
            help="print a per-pass wall-time report to stderr",
        )
        add(
            "--pass-statistics",
            "--mlir-pass-statistics",
            action="store_true",
            help="print per-pass op counts to stderr",
        )
        add(
            "--reproducer",
            metavar="FILE",
            help="when a pass fails, write its input IR and pipeline to FILE",
        )
        add(
            "--run-reproducer",
            action="store_true",
            help="run the pipeline stored in the input file (written by --reproducer)",
        )
        add(
            "--list-passes",
            action="store_true",
            help="list the available passes and named pipelines, then exit",
        )
        add(
            "--traceback",
            action="store_true",
            help="on an internal error, print the Python traceback",
        )

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
        except (ParseError, _OpError):
            raise
        except DiagnosticException as e:
            # e.g. an attribute verifier failing while the parser builds it
            pos = parser.current_position()
            line, col = _line_col(chunk, pos)
            raise _Located(Diag("error", str(e).strip(), file=name, line=line, col=col)) from e
        except (AssertionError, ValueError, TypeError, IndexError, KeyError, OverflowError) as e:
            # xDSL's parser asserts or fails inside on some malformed input (e.g. an unclosed
            # complex number in a dense literal): still the input's fault, at this position
            pos = parser.current_position()
            line, col = _line_col(chunk, pos)
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            msg = f"malformed input: the parser failed here ({why})"
            raise _Located(Diag("error", msg, file=name, line=line, col=col)) from e
        parser.assign_locations()
        return module

    # -- run -------------------------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
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
        self.pipeline = PassPipeline(passes, instr)

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
        try:
            with _remember_diagnostic_ops():
                for i, chunk in enumerate(self._chunks(text)):
                    if i > 0:
                        out.write("// -----\n")
                    result = self._run_chunk(chunk, name, instr, report)
                    if result is not None:
                        with instr.phase("Output"):
                            out.write(self.output_resulting_program(result))
                        out.flush()
        finally:
            if out is not sys.stdout:
                out.close()
        instr.report()

        if verify_mode:
            expected = parse_expectations(source[name])
            errors = check_expectations(diags, expected, name, source)
            for e in errors:
                print(e, file=sys.stderr)
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
                    module = self.available_frontends[ext](_BytesReader(chunk))
                else:
                    module = self._parse(chunk, name)
        except ParseError as e:
            report(_parse_error_diag(e, chunk, name))
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
            except (_OpError, DiagnosticException) as e:
                report(_diag_from_exception(e, name))
                return None

        instr.begin(self.pipeline.passes)
        try:
            self.pipeline.apply(self.ctx, module)
        except (_OpError, DiagnosticException) as e:
            failure = instr.failure()
            d = _diag_from_exception(e, name)
            if failure is not None:
                what = "produced IR that does not verify" if failure.after_pass else "failed"
                d.notes.append(f"note: pass '{failure.pass_.name}' {what}")
            report(d)
            if failure is not None:
                self._maybe_reproduce(failure, d.render({}))
            return None
        except Exception as e:
            failure = instr.failure()
            if failure is not None:
                self._maybe_reproduce(failure, f"internal error: {type(e).__name__}: {e}")
                raise _Internal(f"in pass '{failure.pass_.name}'", e) from e
            raise _Internal("while running the pipeline", e) from e
        return module

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


class _BytesReader:
    """Minimal IO[bytes] for xDSL frontends that take a stream."""

    def __init__(self, text: str) -> None:
        self._data = text.encode("utf-8")

    def read(self, n: int = -1) -> bytes:
        return self._data


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: never lets a Python traceback reach the user (unless asked)."""
    show_tb = "--traceback" in (sys.argv[1:] if argv is None else argv)
    try:
        return ZigguratOptMain(args=argv).run()
    except DriverError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
    except _Internal as e:
        print(f"{PROG}: internal error {e}", file=sys.stderr)
        _hint(show_tb, e.cause)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 1
    except (Exception, ArgSpecParseError) as e:
        print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        _hint(show_tb, e)
    return 1


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
