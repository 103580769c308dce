"""`default-schedule`: a sensible untuned schedule for every kernel that has none.

The schedule itself is passes/schedule/default.py's analytic default; with `threads` > 1 the
outer loops of large kernels also run across threads (parallel_schedule). It is the tuner's
starting point, not a replacement for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import has_dynamic_shape
from passes.schedule.attached import kernel_info, set_schedule
from passes.schedule.cpu_target import cpu_target
from passes.schedule.default import default_schedule, parallel_schedule
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_target import gpu_target
from passes.schedule.options import check_threads_option, check_width_option


@dataclass(frozen=True)
class DefaultSchedulePass(ModulePass):
    """Attach the analytic default schedule to every linalg.generic that has none."""

    name = "default-schedule"

    width: int | None = None
    """Vector width in f32 lanes; omitted: the CPU's widest."""

    cpu: str = ""
    """The CPU the schedules are for (passes/schedule/cpu_target.py: znver4, znver5, x86-64-v3);
    empty = this machine (its vector unit and caches)."""

    threads: int = 1
    """With more than one, the outer loops of large kernels run across threads (parallelize)."""

    target: str = ""
    """A GPU target preset (passes/schedule/gpu_target.py): schedules with GPU meanings for it
    (passes/schedule/gpu_default.py); empty = this CPU."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_width_option(self.name, self.width)
        check_threads_option(self.name, self.threads)
        try:
            cpu = cpu_target(self.cpu)
        except ValueError as e:
            raise DiagnosticException(f"{self.name}: option 'cpu': {e}") from e
        gpu = None
        if self.target:
            try:
                gpu = gpu_target(self.target)
            except ValueError as e:
                raise DiagnosticException(f"{self.name}: option 'target': {e}") from e
        for g in op.walk():
            if (
                isinstance(g, linalg.GenericOp)
                and SCHEDULE_ATTR_NAME not in g.attributes
                and not has_dynamic_shape(g)  # its static blocks are scheduled when lowered
            ):
                info = kernel_info(g, self.name)
                if gpu is not None:
                    set_schedule(g, gpu_default_schedule(info, gpu))
                    continue
                s = default_schedule(info, self.width or None, cpu)
                set_schedule(g, parallel_schedule(s, info, self.threads, cpu))
