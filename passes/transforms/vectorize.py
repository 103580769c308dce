"""`vectorize{dim=D width=W}`: run loop D as vector lanes of width W (dim=-1: scalar code).

The register tile of the vector loop is rounded up to a multiple of the width; `width` is
1..MAX_WIDTH lanes (0: the host CPU's widest).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dialects.sched import MAX_WIDTH, Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.default_schedule import host_vector_width, vectorizable_along
from passes.transforms.schedule_edit import (
    check_op_option,
    check_option,
    edit_schedules,
    option_error,
)


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    name = "vectorize"

    dim: int = -1
    width: int = 0
    """f32 lanes; 0 = the host CPU's widest."""
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo) -> list[int]:
        """The vector-loop knob: -1 (scalar) or a parallel loop the body can run as lanes."""
        return [-1] + [d for d in info.parallel_loops if info.extents[d] >= 2 and vectorizable_along(info, d)]

    def _edit(self, s: Schedule, info: KernelInfo) -> Schedule:
        if self.dim < 0:
            return replace(s, vector=-1, width=1)
        if self.dim >= info.num_loops:
            raise ValueError(
                f"option 'dim': loop {self.dim} does not exist; allowed: -1..{info.num_loops - 1} "
                f"(-1: scalar code; the kernel has {info.num_loops} loops)"
            )
        if not vectorizable_along(info, self.dim):
            raise ValueError(f"loop {self.dim} cannot be vectorized (a reduction, or an index/gather in the body)")
        width = self.width or host_vector_width()
        unroll = list(s.unroll)
        if s.vector >= 0 and s.vector != self.dim:  # the old vector loop's tile counted elements
            unroll[s.vector] = max(1, unroll[s.vector] // s.width)
        unroll[self.dim] = max(width, -(-unroll[self.dim] // width) * width)
        return replace(s, vector=self.dim, width=width, unroll=tuple(unroll))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dim < -1:
            raise option_error(self.name, "dim", self.dim, "-1 (scalar code) or a loop of the kernel (0, 1, ...)")
        check_option(self.name, "width", self.width, 0, MAX_WIDTH, " (0: the host CPU's widest)")
        check_op_option(self.name, self.op)
        edit_schedules(op, self.kernel, self.name, self._edit, self.op)
