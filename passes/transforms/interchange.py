"""`interchange{order=...}`: the loop order of a kernel, outermost first (a permutation)."""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_order
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class InterchangePass(KnobPass):
    name = "interchange"

    order: tuple[int, ...] = ()
    """The kernel's loops, outermost first."""

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_order(schedule, info, self.order)
