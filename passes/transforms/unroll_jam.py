"""`unroll-jam{factors=...}`: the register tile of a kernel.

For a parallel loop the factor is how many iterations are unrolled and jammed into the innermost
(reduction) loop, each with its own accumulator kept in registers; for the vector loop it counts
elements (a multiple of the vector width); for a reduction loop it is a plain unroll factor.
"""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_unroll
from passes.schedule.options import check_per_loop_option
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class UnrollJamPass(KnobPass):
    name = "unroll-jam"

    factors: tuple[int, ...] = ()
    """Register tile (unroll factor) per loop of the kernel."""

    def check_options(self) -> None:
        check_per_loop_option(
            self.name, "factors", self.factors, 1, " (a factor past the loop's extent is cut to it)"
        )

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_unroll(schedule, info, self.factors)
