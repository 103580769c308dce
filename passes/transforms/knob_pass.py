"""`KnobPass`: what the schedule passes (tile, interchange, unroll-jam, vectorize, pack,
parallelize, split-reduction) share: the options naming the kernels they apply to, and `apply`,
which checks the options, then sets one knob of the schedule of every targeted kernel
(passes/schedule/attached.py edit_schedules).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.attached import edit_schedules

TARGET_OPTIONS = ("kernel", "op")
"""KnobPass's own options: a pass spec names them after the knob's."""


@dataclass(frozen=True)
class KnobPass(ModulePass):
    """A schedule pass setting one knob on the targeted kernels (see the module)."""

    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.check_options()
        edit_schedules(op, self.kernel, self.name, self.set_knob, self.op)

    def check_options(self) -> None:
        """Raise the DiagnosticException of an option value out of its range, before any kernel
        is looked at (by default every value is in range)."""

    @abstractmethod
    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        """The kernel's schedule with the knob set (ValueError when it does not fit the
        kernel)."""

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """The knob's options first, then `kernel` and `op` (`tile{sizes=4,8 kernel="k" op=1}`:
        a base class's fields come first, a pass spec reads better the other way round)."""
        spec = super().spec(include_default=include_default)
        knob = {k: v for k, v in spec.parameters.items() if k not in TARGET_OPTIONS}
        target = {k: v for k, v in spec.parameters.items() if k in TARGET_OPTIONS}
        return ArgSpec(spec.name, {**knob, **target})
