"""`unroll-jam{factors=...}`: the register tile of a kernel.

For a parallel loop the factor is how many iterations are unrolled and jammed into the innermost
(reduction) loop, each with its own accumulator kept in registers; for the vector loop it counts
elements (a multiple of the vector width); for a reduction loop it is a plain unroll factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.schedule_edit import (
    check_op_option,
    check_per_loop_option,
    divisors,
    edit_schedules,
    per_loop,
)

SMALL_REG = (1, 2, 3, 4, 6, 8)
MAX_REG = 24
MAX_VECTORS = 8
REDUCTION_UNROLLS = (1, 2, 4, 8)


@dataclass(frozen=True)
class RegisterTileSpace:
    """unroll-jam's knobs: the register tile of each parallel loop (as a scalar loop, and as
    the vector loop, where it counts elements), and the unroll of the innermost reduction."""

    scalar: dict[int, list[int]]
    vector: dict[int, list[int]]
    reduction_unrolls: list[int]


@dataclass(frozen=True)
class UnrollJamPass(ModulePass):
    name = "unroll-jam"

    factors: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo, width: int, default: Schedule, max_accumulators: int) -> RegisterTileSpace:
        """Register tiles: divisors up to MAX_REG and the small sizes (scalar), up to MAX_VECTORS
        vectors (vector loop), and the default schedule's own choices."""
        e = info.extents
        scalar: dict[int, list[int]] = {}
        vector: dict[int, list[int]] = {}
        for d in info.parallel_loops:
            cands = {k for k in divisors(e[d]) if k <= MAX_REG} | {k for k in SMALL_REG if k <= e[d]}
            if d != default.vector and default.unroll[d] <= max_accumulators:
                cands.add(default.unroll[d])
            scalar[d] = sorted(cands)
            nvec = max(1, min(math.ceil(e[d] / width), MAX_VECTORS))
            vcands = {k * width for k in range(1, nvec + 1)}
            if d == default.vector:
                vcands.add(default.unroll[d])
            vector[d] = sorted(vcands)
        reductions = info.reduction_loops
        if reductions:
            last = e[reductions[-1]]
            u = {k for k in REDUCTION_UNROLLS if k <= last}
            if last <= max(REDUCTION_UNROLLS):
                u.add(last)
            u.add(default.unroll[reductions[-1]])
            unrolls = sorted(u)
        else:
            unrolls = [1]
        return RegisterTileSpace(scalar, vector, unrolls)

    def _edit(self, s: Schedule, info: KernelInfo) -> Schedule:
        factors = per_loop(self.factors, info, "unroll factors")
        if s.vector >= 0 and factors[s.vector] % s.width:
            raise ValueError(
                f"option 'factors': {factors[s.vector]} (loop {s.vector}, the vector loop: it counts elements) "
                f"is not a multiple of the vector width {s.width}"
            )
        return replace(s, unroll=factors)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_per_loop_option(
            self.name, "factors", self.factors, 1, " (a factor past the loop's extent is cut to it)"
        )
        check_op_option(self.name, self.op)
        edit_schedules(op, self.kernel, self.name, self._edit, self.op)
