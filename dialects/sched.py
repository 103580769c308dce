"""The `sched` dialect: loop schedules attached to linalg kernels.

Schedule passes (`tile`, `interchange`, `vectorize`, `unroll-jam`, `pack`, `parallelize`,
`default-schedule`, and the tuner) only edit a `#sched.schedule` attribute on each
`linalg.generic`; `convert-linalg-to-loops` materializes it as one loop nest. Keeping the schedule
declarative (as Halide and TVM do) means a tuning decision is a small value that can be hashed,
stored and replayed, and the lowering stays one function that is easy to test.

This module holds the value and what can be checked without the kernel (Schedule.check); the
rules that need the kernel, the default schedule and the knobs' search space are in
passes/schedule/.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Dialect, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

SCHEDULE_ATTR_NAME = "sched.schedule"
"""The discardable attribute under which a linalg op carries its schedule."""

MAX_EXTENT = 2**31
"""The largest tile size or unroll factor: the most iterations a loop can have (a tensor holds at
most 2**31 elements, as compiler/frontend/onnx.py's MAX_ELEMENTS says). Anything larger is a typo."""
MAX_WIDTH = 64
"""The widest vector, in elements (a 2048-bit vector of f32; the widest hardware has 16 lanes)."""


@dataclass(frozen=True)
class Schedule:
    """Plain-Python view of a schedule, one entry per loop of the kernel.

    tile:   cache-level tile size per loop (0 = not tiled)
    order:  loop order of the tile loops, outermost first (a permutation)
    unroll: register-tile size per parallel loop (unroll-and-jam; for the vector loop it counts
            elements and is a multiple of `width`), unroll factor for reduction loops
    vector: the loop whose iterations become vector lanes (-1 = scalar code)
    width:  vector width in elements
    parallel: how many of the outermost tile loops (in `order`) run in parallel across threads
            (0 = none); they must be parallel iterators. Their full cache tiles form one
            `scf.parallel` that convert-parallel-to-runtime hands to the thread-pool runtime.
    pack:   input operands (indices into the kernel's operands) copied into a contiguous panel
            at the start of every innermost cache tile, and read from there inside it.
    split:  threads sharing each output's reduction (a GPU knob, for small outputs with long
            reductions): the innermost reduction loop of `order` is dealt out among them,
            interleaved, and their partial results are combined in workgroup memory (1 = none).
    """

    tile: tuple[int, ...]
    order: tuple[int, ...]
    unroll: tuple[int, ...]
    vector: int = -1
    width: int = 1
    parallel: int = 0
    pack: tuple[int, ...] = ()
    split: int = 1

    def check(self, num_loops: int) -> None:
        """Raise ValueError when the schedule does not fit a kernel with `num_loops` loops."""
        n = num_loops
        lengths = (len(self.tile), len(self.order), len(self.unroll))
        if len(set(lengths)) != 1:
            got = ", ".join(map(str, lengths))
            raise ValueError(f"tile, order and unroll need one entry per loop (got {got})")
        if lengths[0] != n:
            raise ValueError(f"the schedule has {lengths[0]} loops, the kernel has {n}")
        if sorted(self.order) != list(range(n)):
            raise ValueError(f"order {list(self.order)} is not a permutation of {n} loops")
        if any(t < 0 for t in self.tile) or any(u < 1 for u in self.unroll):
            raise ValueError("tile sizes must be >= 0 and unroll factors >= 1")
        if any(x > MAX_EXTENT for x in (*self.tile, *self.unroll)):
            raise ValueError(f"tile sizes and unroll factors must be at most 2**31 = {MAX_EXTENT}")
        if not 1 <= self.width <= MAX_WIDTH:
            raise ValueError(f"width = {self.width} is out of range 1..{MAX_WIDTH}")
        if self.vector >= n or self.vector < -1:
            raise ValueError(f"vector loop {self.vector} out of range")
        if self.vector >= 0 and (self.width < 1 or self.unroll[self.vector] % self.width):
            raise ValueError("the vector loop's register tile must be a multiple of the width")
        if not 0 <= self.parallel <= n:
            raise ValueError(f"parallel = {self.parallel} is not a number of loops in 0..{n}")
        if len(set(self.pack)) != len(self.pack) or any(i < 0 for i in self.pack):
            raise ValueError(f"pack {list(self.pack)} must list distinct operand indices")
        if not 1 <= self.split <= MAX_EXTENT:
            raise ValueError(f"split = {self.split} is not a thread count in 1..2**31")


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """`#sched.schedule<tile = [..], order = [..], unroll = [..], vector = V, width = W
    [, parallel = P]>` (`parallel` printed only when nonzero)."""

    name = "sched.schedule"

    tile: ArrayAttr[IntAttr]
    order: ArrayAttr[IntAttr]
    unroll: ArrayAttr[IntAttr]
    vector: IntAttr
    width: IntAttr
    parallel: IntAttr
    pack: ArrayAttr[IntAttr]
    split: IntAttr

    @staticmethod
    def from_schedule(s: Schedule) -> ScheduleAttr:
        def ints(xs: Sequence[int]) -> ArrayAttr[IntAttr]:
            return ArrayAttr([IntAttr(x) for x in xs])

        return ScheduleAttr(
            ints(s.tile),
            ints(s.order),
            ints(s.unroll),
            IntAttr(s.vector),
            IntAttr(s.width),
            IntAttr(s.parallel),
            ints(s.pack),
            IntAttr(s.split),
        )

    def schedule(self) -> Schedule:
        return Schedule(
            tuple(x.data for x in self.tile),
            tuple(x.data for x in self.order),
            tuple(x.data for x in self.unroll),
            self.vector.data,
            self.width.data,
            self.parallel.data,
            tuple(x.data for x in self.pack),
            self.split.data,
        )

    def verify(self) -> None:
        s = self.schedule()
        try:
            s.check(len(s.tile))
        except ValueError as e:
            raise VerifyException(f"invalid #sched.schedule: {e}") from e

    def print_parameters(self, printer: Printer) -> None:
        def ints(xs: ArrayAttr[IntAttr]) -> str:
            return "[" + ", ".join(str(x.data) for x in xs) + "]"

        printer.print_string(
            f"<tile = {ints(self.tile)}, order = {ints(self.order)}, unroll = {ints(self.unroll)}, "
            f"vector = {self.vector.data}, width = {self.width.data}"
            + (f", parallel = {self.parallel.data}" if self.parallel.data else "")
            + (f", pack = {ints(self.pack)}" if self.pack.data else "")
            + (f", split = {self.split.data}" if self.split.data != 1 else "")
            + ">"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[IntAttr | ArrayAttr[IntAttr]]:
        def int_list() -> ArrayAttr[IntAttr]:
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
            return ArrayAttr([IntAttr(v) for v in values])

        def field(key: str) -> None:
            parser.parse_keyword(key)
            parser.parse_punctuation("=")

        with parser.in_angle_brackets():
            field("tile")
            tile = int_list()
            parser.parse_punctuation(",")
            field("order")
            order = int_list()
            parser.parse_punctuation(",")
            field("unroll")
            unroll = int_list()
            parser.parse_punctuation(",")
            field("vector")
            vector = IntAttr(parser.parse_integer())
            parser.parse_punctuation(",")
            field("width")
            width = IntAttr(parser.parse_integer())
            parallel, pack, split = IntAttr(0), ArrayAttr[IntAttr]([]), IntAttr(1)
            while parser.parse_optional_punctuation(","):  # optional fields, in this order
                if parser.parse_optional_keyword("parallel"):
                    parser.parse_punctuation("=")
                    parallel = IntAttr(parser.parse_integer())
                elif parser.parse_optional_keyword("split"):
                    parser.parse_punctuation("=")
                    split = IntAttr(parser.parse_integer())
                else:
                    field("pack")
                    pack = int_list()
        return [tile, order, unroll, vector, width, parallel, pack, split]


Sched = Dialect("sched", [], [ScheduleAttr])
