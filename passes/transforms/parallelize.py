"""`parallelize{loops=N}`: run the N outermost tile loops of a kernel across threads.

Like TVM's `parallel` and OpenMP's `collapse(N)`: the first N loops of the schedule's `order`
(all parallel iterators) have their full cache tiles distributed over the thread pool as one
collapsed iteration space. A loop without cache tiles contributes nothing, so `parallelize`
is usually combined with `tile`. `loops=0` makes the kernel sequential again.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_parallel
from passes.schedule.options import option_error


@dataclass(frozen=True)
class ParallelizePass(ModulePass):
    name = "parallelize"

    loops: int = 1
    """How many outermost loops of the order run across threads (0: sequential)."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.loops < 0:
            raise option_error(
                self.name, "loops", self.loops, "0 (sequential) up to the kernel's number of loops"
            )
        edit_schedules(
            op, self.kernel, self.name, lambda s, info: set_parallel(s, info, self.loops), self.op
        )
