"""Handlers of the function-level and gpu ops: func.return / gpu.return, the work-item ids
(gpu.thread_id, block_id, ...) and gpu.barrier."""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter, _handles


@_handles("func.return", "gpu.return")
def _return(p: _FunctionPrinter, op: Operation) -> None:
    if op.operands:
        raise _Unsupported("a kernel returns no values")
    if op.next_op is not None or op.parent_op() is not p.fn:
        p.line("return;")


@_handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.global_id")
def _special(p: _FunctionPrinter, op: Operation) -> None:
    dim = op.properties.get("dimension")
    if not isinstance(dim, gpu.DimensionAttr):
        raise _Unsupported("the op has no dimension")
    axis = "xyz".index(dim.data.value)
    p.define(op.results[0], p.fl.special(op.name.split(".")[1], axis))


@_handles("gpu.barrier")
def _barrier(p: _FunctionPrinter, op: Operation) -> None:
    p.line(p.fl.barrier)
