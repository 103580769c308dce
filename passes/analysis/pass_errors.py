"""Errors a pass raises for input it does not handle, pinned to the op at fault.

In the lowest layer of the passes so that every pass can raise them. The exception is xDSL's
DiagnosticException (what ziggurat-opt reports as one `error:` line, and the model API as a
CompileError naming the pass) carrying the op in `op`, where compiler/diagnostics.py's
`diag_from_exception` looks for it to give the op's `file:line:col`.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


def op_error(op: Operation, message: str) -> DiagnosticException:
    """A DiagnosticException with `message`, located at `op`."""
    error = DiagnosticException(message)
    error.op = op  # type: ignore[attr-defined]
    return error
