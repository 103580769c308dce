"""`interchange{order=...}`: the loop order of a kernel, outermost first (a permutation)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_order


@dataclass(frozen=True)
class InterchangePass(ModulePass):
    name = "interchange"

    order: tuple[int, ...] = ()
    """The kernel's loops, outermost first."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        edit_schedules(
            op, self.kernel, self.name, lambda s, info: set_order(s, info, self.order), self.op
        )
