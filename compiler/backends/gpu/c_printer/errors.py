"""The C printer's two errors: PrintError, the public one (names the op and the function), and
_Unsupported, raised by a translation step and turned into a PrintError by the op loop. Apart so
that every part of the printer can raise them without importing the function printer."""

from __future__ import annotations

from compiler.errors import CompileError


class PrintError(CompileError):
    """An op or type the C printer cannot express; the message names the op and the function."""


class _Unsupported(Exception):
    """Raised inside an op's translation; the op loop adds the op and the function's name."""
