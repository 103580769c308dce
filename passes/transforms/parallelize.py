"""`parallelize{loops=N}`: run the N outermost tile loops of a kernel across threads.

Like TVM's `parallel` and OpenMP's `collapse(N)`: the first N loops of the schedule's `order`
(all parallel iterators) have their full cache tiles distributed over the thread pool as one
collapsed iteration space. A loop without cache tiles contributes nothing, so `parallelize`
is usually combined with `tile`. `loops=0` makes the kernel sequential again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.schedule_edit import check_op_option, edit_schedules, option_error

MAX_THREADS = 1024
"""The most threads the thread-pool runtime runs (MAX_THREADS in compiler/parallel_runtime.c)."""


def check_parallel(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless the first `s.parallel` loops of the order are parallel iterators."""
    for d in s.order[: s.parallel]:
        if info.iterators[d] != "parallel":
            raise ValueError(
                f"loop {d} is a reduction: only the outermost parallel loops can run across threads "
                f"(order {list(s.order)}, parallel = {s.parallel})"
            )


@dataclass(frozen=True)
class ParallelizePass(ModulePass):
    name = "parallelize"

    loops: int = 1
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo, order: list[int], threads: int) -> list[int]:
        """How many outer loops may run across threads with this order ([0] on one thread)."""
        if threads <= 1:
            return [0]
        k = 0
        while k < len(order) and info.iterators[order[k]] == "parallel":
            k += 1
        return list(range(k + 1))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.loops < 0:
            raise option_error(self.name, "loops", self.loops, "0 (sequential) up to the kernel's number of loops")
        check_op_option(self.name, self.op)

        def edit(s: Schedule, info: KernelInfo) -> Schedule:
            if self.loops > info.num_loops:
                raise ValueError(
                    f"option 'loops': {self.loops} is out of range; allowed: 0..{info.num_loops} "
                    f"(the kernel has {info.num_loops} loops)"
                )
            new = replace(s, parallel=self.loops)
            new.check(info.num_loops)
            check_parallel(new, info)
            return new

        edit_schedules(op, self.kernel, self.name, edit, self.op)


MIN_PARALLEL_ITERATIONS = 1 << 15
"""Kernels with fewer loop iterations than this stay sequential: waking the pool costs more."""
CHUNKS_PER_THREAD = 4


def parallel_schedule(s: Schedule, info: KernelInfo, threads: int) -> Schedule:
    """`s` with its outermost parallel loops run across `threads` threads (the default heuristic).

    Leading parallel loops of the order are collapsed until there are CHUNKS_PER_THREAD cache
    tiles per thread; an untiled loop gets the smallest tile (a multiple of its register tile
    that divides the extent) that reaches that count.
    """
    if threads <= 1 or math.prod(info.extents) < MIN_PARALLEL_ITERATIONS:
        return s
    want = threads * CHUNKS_PER_THREAD
    tile = list(s.tile)
    count, loops = 1, 0
    for d in s.order:
        if info.iterators[d] != "parallel" or count >= want:
            break
        loops += 1
        ext, reg = info.extents[d], max(s.unroll[d], 1)
        t = tile[d] if 0 < tile[d] < ext else ext
        if ext % t:
            break  # a peeled remainder tile: collapsing stops here (see parallel_dims)
        fits = [k for k in range(reg, t + 1, reg) if t % k == 0 and ext % k == 0]
        enough = [k for k in fits if count * (ext // k) >= want]
        if enough:
            t = max(enough)
        elif fits:
            t = min(fits)
        tile[d] = t if t < ext else 0
        count *= ext // t
    if count < 2:
        return s
    return replace(s, tile=tuple(tile), parallel=loops)
