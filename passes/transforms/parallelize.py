"""`parallelize{loops=N}`: run the N outermost tile loops of a kernel across threads.

Like TVM's `parallel` and OpenMP's `collapse(N)`: the first N loops of the schedule's `order`
(all parallel iterators) have their full cache tiles distributed over the thread pool as one
collapsed iteration space. A loop without cache tiles contributes nothing, so `parallelize`
is usually combined with `tile`. `loops=0` makes the kernel sequential again.
"""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_parallel
from passes.schedule.options import option_error
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class ParallelizePass(KnobPass):
    name = "parallelize"

    loops: int = 1
    """How many outermost loops of the order run across threads (0: sequential)."""

    def check_options(self) -> None:
        if self.loops < 0:
            raise option_error(
                self.name, "loops", self.loops, "0 (sequential) up to the kernel's number of loops"
            )

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_parallel(schedule, info, self.loops)
