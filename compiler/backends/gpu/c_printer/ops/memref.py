"""Handlers of the memref ops: loads and stores through the layout's address, private buffers
(alloca), views that print no code, byte views, static dims and workgroup globals."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    MemRefType,
)
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter, _handles, _Pointer
from compiler.backends.gpu.c_printer.memref_layout import _extent, _memory_space


@_handles("memref.load")
def _load(p: _FunctionPrinter, op: Operation) -> None:
    memref, *indices = op.operands
    ptr, index = p.address(memref, indices)
    p.define(op.results[0], f"{ptr}[{index}]")


@_handles("memref.store")
def _store(p: _FunctionPrinter, op: Operation) -> None:
    value, memref, *indices = op.operands
    ptr, index = p.address(memref, indices)
    e = p.scalar_of(value.type)
    text = p.expr(value)
    if e.is_bool:
        text = f"({p.fl.mem_ctype(e)}){text}"
    p.line(f"{ptr}[{index}] = {text};")


@_handles("memref.alloca")
def _alloca(p: _FunctionPrinter, op: Operation) -> None:
    t = op.results[0].type
    if op.operands:
        raise _Unsupported("dynamic sizes are not printed")
    if not isinstance(t, MemRefType) or _memory_space(t) != 0:
        raise _Unsupported(f"a private buffer lives in the default memory space (got {t})")
    name = p.fresh()
    p.line(f"{p.fl.mem_ctype(p.element(t.element_type))} {name}[{_extent(t)}];")
    p.pointers[op.results[0]] = _Pointer(name, "private")


@_handles(
    "memref.subview",
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.reinterpret_cast",
    "memref.cast",
)
def _view(p: _FunctionPrinter, op: Operation) -> None:
    # the same pointer; loads and stores read the result type's own offset and strides
    source = p.pointer(op.operands[0])
    result = op.results[0]
    if not isinstance(result.type, MemRefType):
        raise _Unsupported(f"the result {result.type} is not a memref")
    p.pointers[result] = source


@_handles("memref.view")
def _byte_view(p: _FunctionPrinter, op: Operation) -> None:
    source, shift = p.pointer(op.operands[0]), op.operands[1]
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise _Unsupported(f"the result {t} is not a memref")
    ctype = p.fl.mem_ctype(p.element(t.element_type))
    space = p.fl.address_space(source.space)
    name = p.fresh()
    p.line(
        f"{space}{ctype}* {name} = ({space}{ctype}*)(({space}char*){source.name} + "
        f"{p.expr(shift)});"
    )
    p.pointers[op.results[0]] = _Pointer(name, source.space)


@_handles("memref.dim")
def _dim(p: _FunctionPrinter, op: Operation) -> None:
    source, index = op.operands
    t = source.type
    dim = p.ints.get(index)
    if not isinstance(t, MemRefType) or dim is None or t.get_shape()[dim] < 0:
        raise _Unsupported("only static dimensions of a constant index are printed")
    size = t.get_shape()[dim]
    p.names[op.results[0]] = str(size)
    p.ints[op.results[0]] = size


@_handles("memref.get_global")
def _get_global(p: _FunctionPrinter, op: Operation) -> None:
    if op.results[0] not in p.pointers:  # declared at the top of the kernel
        p.workgroup_buffer(op)
