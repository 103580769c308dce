"""xDSL's parser, plus a `file:line:col` location on every op it parses."""

from __future__ import annotations

import bisect
import re

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser


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
