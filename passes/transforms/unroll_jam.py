"""`unroll-jam{factors=...}`: the register tile of a kernel.

For a parallel loop the factor is how many iterations are unrolled and jammed into the innermost
(reduction) loop, each with its own accumulator kept in registers; for the vector loop it counts
elements (a multiple of the vector width); for a reduction loop it is a plain unroll factor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.transforms.schedule_edit import edit_schedules, per_loop


@dataclass(frozen=True)
class UnrollJamPass(ModulePass):
    name = "unroll-jam"

    factors: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        edit_schedules(
            op, self.kernel, self.name,
            lambda s, info: replace(s, unroll=per_loop(self.factors, info, "unroll factors")),
            self.op,
        )
