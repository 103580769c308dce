"""The printer's scalar element types (`_Elem`: float, signless integer, index) and rank-1
vector layouts (`_Vec`), the types every other part speaks in; apart because both the flavours
and the function printer build on them."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute

from compiler.backends.gpu.c_printer.errors import _Unsupported


@dataclass(frozen=True)
class _Elem:
    """A scalar element type: kind "f" (float), "i" (signless integer) or "index"."""

    kind: str
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.kind == "i" and self.bits == 1

    @property
    def is_index(self) -> bool:
        return self.kind == "index"


_INDEX = _Elem("index", 32)


def _elem(t: Attribute) -> _Elem:
    """The element type of a scalar type; _Unsupported for anything else."""
    if isinstance(t, Float32Type):
        return _Elem("f", 32)
    if isinstance(t, Float64Type):
        return _Elem("f", 64)
    if isinstance(t, IndexType):
        return _INDEX
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return _Elem("i", t.width.data)
    raise _Unsupported(f"type {t} has no C equivalent here")


@dataclass(frozen=True)
class _Vec:
    """A rank-1 vector type: its element, lane count and the lanes of its C type (1: a scalar)."""

    elem: _Elem
    lanes: int
    storage: int
