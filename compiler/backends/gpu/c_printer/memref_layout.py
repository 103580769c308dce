"""Static memref layouts as the kernels address them: (strides, offset) in elements, the extent a
buffer spans, its memory space number. Apart because the function printer (arguments, workgroup
buffers, addresses) and the memref and vector handlers all read them."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    IntAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
)

from compiler.backends.gpu.c_printer.errors import _Unsupported


def _layout(t: MemRefType, what: str = "memref") -> tuple[list[int], int]:
    """Static (strides, offset) of a memref type, in elements."""
    shape = list(t.get_shape())
    layout = t.layout
    if isinstance(layout, NoneAttr):
        if any(d < 0 for d in shape):
            raise _Unsupported(f"{what} type {t} has a dynamic shape")
        strides: list[int] = []
        running = 1
        for d in reversed(shape):
            strides.insert(0, running)
            running *= d
        return strides, 0
    if isinstance(layout, StridedLayoutAttr):
        got, offset = layout.get_strides(), layout.get_offset()
        if offset is None or any(s is None for s in got):
            raise _Unsupported(f"{what} type {t} has a dynamic offset or stride")
        return [s for s in got if s is not None], offset
    raise _Unsupported(f"{what} type {t} has a layout that is not strided")


def _extent(t: MemRefType) -> int:
    """Elements a buffer of type t spans from its pointer (offset included)."""
    shape = list(t.get_shape())
    if any(d < 0 for d in shape):
        raise _Unsupported(f"memref type {t} has a dynamic shape")
    if 0 in shape:
        return 1
    strides, offset = _layout(t)
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _memory_space(t: MemRefType) -> int:
    space = t.memory_space
    if isinstance(space, NoneAttr):
        return 0
    if isinstance(space, IntegerAttr):
        return space.value.data
    if isinstance(space, IntAttr):
        return space.data
    raise _Unsupported(f"memory space {space} is not a number")
