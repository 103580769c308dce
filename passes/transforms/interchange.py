"""`interchange{order=...}`: the loop order of a kernel, outermost first (a permutation)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.schedule_edit import check_op_option, edit_schedules, per_loop


@dataclass(frozen=True)
class InterchangePass(ModulePass):
    name = "interchange"

    order: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo) -> list[list[int]]:
        """The loop-order knob: parallel loops in their order, the reduction loops (in theirs)
        inserted at one position (the orders that matter for reuse of the register tile)."""
        p, r = info.parallel_loops, info.reduction_loops
        if not r:
            return [list(range(info.num_loops))]
        return [p[:k] + r + p[k:] for k in range(len(p) + 1)]

    def _edit(self, s: Schedule, info: KernelInfo) -> Schedule:
        order = per_loop(self.order, info, "loop positions")
        n = info.num_loops
        if sorted(order) != list(range(n)):
            raise ValueError(
                f"option 'order': {','.join(map(str, order))} is not a permutation of the kernel's {n} loops "
                f"(each of 0..{n - 1} once, outermost first)"
            )
        return replace(s, order=order)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_op_option(self.name, self.op)
        edit_schedules(op, self.kernel, self.name, self._edit, self.op)
