"""`vectorize{dim=D width=W}`: run loop D as vector lanes of width W (dim=-1: scalar code).

The register tile of the vector loop is rounded up to a multiple of the width; `width` is
a power of two in 1..MAX_WIDTH lanes (omitted: the host CPU's widest).
"""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_vector
from passes.schedule.options import check_width_option, option_error
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class VectorizePass(KnobPass):
    name = "vectorize"

    dim: int = -1
    """The loop whose iterations become vector lanes (-1: scalar code)."""
    width: int | None = None
    """f32 lanes; omitted: the host CPU's widest."""

    def check_options(self) -> None:
        if self.dim < -1:
            raise option_error(
                self.name, "dim", self.dim, "-1 (scalar code) or a loop of the kernel (0, 1, ...)"
            )
        check_width_option(self.name, self.width)

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_vector(schedule, info, self.dim, self.width or 0)
