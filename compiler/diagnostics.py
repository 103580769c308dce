"""MLIR-style diagnostics: errors located at `file:line:col` in the input, rendered with the
source line and a caret, never by opening a file that the IR names.

Used by `ziggurat-opt` (compiler/cli/opt.py); lives in the compiler layer so that any driver
(or a test) can verify a module and locate the op at fault.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation
from xdsl.utils import diagnostic as xdsl_diagnostic
from xdsl.utils.exceptions import MultipleSpansParseError, ParseError, VerifyException


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


class OpError(Exception):
    """A verifier failure pinned to the operation that failed."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message


@contextlib.contextmanager
def remember_diagnostic_ops() -> Iterator[None]:
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
            raise OpError(op, str(e)) from e
        except Exception as e:  # a verifier tripping over broken IR (e.g. erased values)
            raise OpError(op, f"{type(e).__name__}: {e}") from e
    raise first  # a block/region invariant the per-op walk does not cover


def diag_from_exception(exc: BaseException, input_name: str) -> Diag:
    """Turn a verifier or pass exception into a located error where the IR allows."""
    op: Operation | None = None
    message = str(exc).strip() or type(exc).__name__
    if isinstance(exc, OpError):
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


def line_col(text: str, pos: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - line_start + 1


def parse_error_diag(e: ParseError, text: str, name: str) -> Diag:
    """A ParseError as an MLIR-style diagnostic, at the most useful position."""
    loc = e.span.get_location()
    line, col = loc.line, loc.col
    msg = e.msg
    if m := re.match(r"values used but not defined: \[(%[^,\]]+)", msg):
        # xDSL reports this at the end of the input; point at the first use instead.
        for use in re.finditer(re.escape(m.group(1)) + r"(?![\w$.\-])", text):
            if "//" in text[text.rfind("\n", 0, use.start()) + 1 : use.start()]:
                continue  # in a comment
            line, col = line_col(text, use.start())
            msg = f"use of undeclared SSA value name {m.group(1)}"
            break
    d = Diag("error", msg, file=loc.file or name, line=line, col=col, length=max(1, e.span.len))
    if isinstance(e, MultipleSpansParseError):
        for span, note in e.refs:
            rl = span.get_location()
            d.notes.append(f"{rl.file}:{rl.line}:{rl.col}: note: {note or ''}".rstrip())
    return d
