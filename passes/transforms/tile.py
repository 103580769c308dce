"""`tile{sizes=...}`: cache-level tile sizes of a kernel's loops (0 keeps a loop untiled).

A size is 0..2**31 - 1 (an int32); one past its loop's extent is clamped to the extent (the loop stays untiled).
"""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_tile
from passes.schedule.options import check_per_loop_option
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class TilePass(KnobPass):
    name = "tile"

    sizes: tuple[int, ...] = ()
    """Cache tile size per loop of the kernel (0: untiled)."""

    def check_options(self) -> None:
        check_per_loop_option(
            self.name,
            "sizes",
            self.sizes,
            0,
            " (0: untiled; a size past the loop's extent is cut to it)",
        )

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_tile(schedule, info, self.sizes)
