"""`unroll-jam{factors=...}`: the register tile of a kernel.

For a parallel loop the factor is how many iterations are unrolled and jammed into the innermost
(reduction) loop, each with its own accumulator kept in registers; for the vector loop it counts
elements (a multiple of the vector width); for a reduction loop it is a plain unroll factor.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_unroll
from passes.schedule.options import check_per_loop_option


@dataclass(frozen=True)
class UnrollJamPass(ModulePass):
    name = "unroll-jam"

    factors: tuple[int, ...] = ()
    """Register tile (unroll factor) per loop of the kernel."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_per_loop_option(
            self.name, "factors", self.factors, 1, " (a factor past the loop's extent is cut to it)"
        )
        edit_schedules(
            op, self.kernel, self.name, lambda s, info: set_unroll(s, info, self.factors), self.op
        )
