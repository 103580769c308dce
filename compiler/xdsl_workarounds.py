"""Workarounds for xDSL 0.74 bugs that hostile or mangled MLIR input hits, in one place.

Applied once, on import, by the drivers that parse or print MLIR text (compiler/cli/opt.py and
compiler/cli/main.py). Each patch keeps
xDSL's behaviour on valid input and says which bug it works around; drop it when xDSL is fixed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, i1
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRLexer

MAX_INTEGER_WIDTH = (1 << 24) - 1
"""MLIR's IntegerType::kMaxWidth: wider types are rejected by mlir-opt."""

# xDSL's string-literal regex nests a `+` inside a `*` ("(?:[^"...]+|\\...)*"), so on a string
# that never closes the engine tries every way of splitting the characters: twice the time per
# character (a 70-character line never finishes). One character per iteration matches exactly
# the same strings in linear time.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

_original_integer_verify: Callable[..., None] = IntegerType.verify


def _verify_integer_width(self: IntegerType) -> None:
    """xDSL accepts any width, and verifying `1 : i4294967296` builds `1 << width`, a 4 GB
    integer: bound widths as MLIR does before anything computes with them."""
    if self.width.data > MAX_INTEGER_WIDTH:
        raise VerifyException(
            f"integer bitwidth is limited to {MAX_INTEGER_WIDTH} bits (got i{self.width.data})"
        )
    _original_integer_verify(self)


_original_dense_print: Callable[..., None] = DenseIntOrFPElementsAttr.print_without_type


def _print_dense_without_type(self: DenseIntOrFPElementsAttr, printer: Printer) -> None:
    """xDSL prints a large dense i1 attribute as hex with one byte per element; MLIR reads i1
    hex as packed bits and rejects it (gpt2's causal mask). Print such an attribute as a list
    of true/false, which both read the same."""
    if self.get_element_type() == i1 and len(self) > 100 and not self.is_splat():
        shape = self.get_shape() if self.shape_is_complete else (len(self),)
        printer.print_string("dense<")
        self._print_dense_list(self.get_values(), shape, printer)
        printer.print_string(">")
        return
    _original_dense_print(self, printer)


def apply() -> None:
    """Install the patches (idempotent)."""
    MLIRLexer._unescaped_characters_regex = _STRING_LITERAL
    IntegerType.verify = _verify_integer_width  # type: ignore[method-assign]
    DenseIntOrFPElementsAttr.print_without_type = _print_dense_without_type  # type: ignore[method-assign]


apply()
