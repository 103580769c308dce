"""`split-reduction{threads=K}`: K GPU threads share each output's reduction.

The GPU knob for small outputs with long reductions (passes/schedule/reduction_split.py says
how it runs and when it is sound): the innermost reduction loop of the order is dealt out among
K threads and their partial results are combined in workgroup memory. threads=1 turns it off.
A split reduction is scalar and unstaged, so the pass resets `vector`, `pack` and the reduction
tiles; the CPU lowering rejects a split (there, one thread runs each output's reduction).
"""

from __future__ import annotations

from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_split
from passes.schedule.options import MAX_OPTION, option_error
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class SplitReductionPass(KnobPass):
    name = "split-reduction"

    threads: int = 1
    """Threads per output's reduction (1: not split)."""

    def check_options(self) -> None:
        if not 1 <= self.threads <= MAX_OPTION:
            raise option_error(self.name, "threads", self.threads, "a thread count (1, 2, ...)")

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_split(schedule, info, self.threads)
