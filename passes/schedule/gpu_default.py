"""The analytic default schedule of a kernel on a GPU target (gpu_rules.py says what it means).

Derived from the target description, never from one device's tuned constants:
- register tile: the CPU heuristic's choice of vector loop and second register-tile loop
  (passes/schedule/default.py), cut to divisors of the extents; on SIMT targets at most
  SIMT_REGISTER_TILE per loop and scalar (a thread's tile is small; the threads are many);
- threads: the target's threads_per_block, given out innermost loop first;
- SIMT targets with a reduction: a staging depth of about STAGE_DEPTH reduction iterations and
  every input that threads of the block share (invariant to a loop with several threads) staged
  in workgroup memory, dropped again if it does not fit;
- SIMT targets, a kernel with fewer outputs than the device's resident threads and an input it
  streams (one no two outputs read, as a softmax row, a pooling window or a batch-1 classifier's
  weights: no register tile or staging can reuse it): its reduction split across up to
  threads_per_block lanes per output (each lane at least MIN_LANE_ITERATIONS iterations), one
  output per lane group; as TVM's cross-thread reductions and small-batch dense schedules.
"""

from __future__ import annotations

import math
from dataclasses import replace

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.cpu_target import cpu_target
from passes.schedule.default import default_schedule, divisor_at_most
from passes.schedule.gpu_rules import check_gpu_schedule, gpu_mapping, staged_bytes
from passes.schedule.gpu_target import GpuTarget
from passes.schedule.reduction_split import combiner
from passes.schedule.rules import MAX_UNROLLED_BODIES, packable, unrolled_bodies

SIMT_REGISTER_TILE = 4
"""Register tile per loop on SIMT targets: 4x4 accumulators reuse each staged value 4 times."""
STAGE_DEPTH = 32
"""Reduction iterations staged per step on SIMT targets: enough work between two barriers."""
MIN_LANE_ITERATIONS = 4
"""Reduction iterations each lane of a split reduction runs at least (fewer: the tree costs
more than the loop it shortens)."""


def _register_tile(info: KernelInfo, target: GpuTarget) -> tuple[list[int], int, int]:
    """(unroll per loop, vector loop, width), every parallel entry dividing its extent."""
    widest = max(target.vector_widths)
    width = widest if target.cpu_like else 4
    # the CPU heuristic's register-tile shape, its budget (half the "register file") the GPU
    # target's accumulator bound in vectors of that width
    regs = 2 * max(1, target.max_accumulators // width)
    base = default_schedule(
        info, cpu=replace(cpu_target(), width=width, registers=regs), along_reduction=False
    )
    v, width = base.vector, base.width
    if not target.cpu_like or v < 0:
        v, width = -1, 1
    else:
        width = max(w for w in target.vector_widths if w <= width and info.extents[v] % w == 0)
        if width == 1:
            v = -1
    unroll = list(base.unroll)
    for d in info.parallel_loops:
        limit = unroll[d] if target.cpu_like else min(unroll[d], SIMT_REGISTER_TILE)
        if not target.cpu_like and not info.reduction_loops:
            limit = 1  # elementwise: one element per thread, neighbours on neighbouring threads
        unroll[d] = divisor_at_most(info.extents[d], limit, width if d == v else 1)
    return unroll, v, width


def _stage(s: Schedule, info: KernelInfo, target: GpuTarget) -> Schedule:
    """A staging depth for the reduction loops, and the shared inputs staged at it."""
    tile = list(s.tile)
    depth = 1
    split = False
    for d in reversed(info.reduction_loops):  # innermost first
        extent = info.extents[d]
        if split:
            tile[d] = 1
        elif depth * extent <= STAGE_DEPTH:
            depth *= extent
        else:
            tile[d] = divisor_at_most(extent, max(STAGE_DEPTH // depth, 1))
            split = True
    staged = replace(s, tile=tuple(tile))
    m = gpu_mapping(staged, info)
    shared_by_threads = [
        i
        for i in range(len(info.op.inputs))
        if packable(info, i)
        and any(m.threads[d] > 1 and info.accesses[i].invariant_to(d) for d in info.parallel_loops)
    ]
    staged = replace(staged, pack=tuple(shared_by_threads))
    while staged.pack and staged_bytes(staged, info) > target.shared_bytes:
        staged = replace(staged, pack=staged.pack[:-1])
    return staged


def _streamed(info: KernelInfo, i: int) -> bool:
    """Input i is read by one output only: it varies along every parallel loop longer than 1."""
    access = info.accesses[i]
    if access.is_scalar:
        return False
    return not any(info.extents[d] > 1 and access.invariant_to(d) for d in info.parallel_loops)


def _split(info: KernelInfo, target: GpuTarget) -> int:
    """Lanes per output when the outputs are too few to fill the device (1: no split)."""
    if target.cpu_like or not info.reduction_loops or target.resident_threads == 0:
        return 1
    outputs = math.prod(info.extents[d] for d in info.parallel_loops)
    reduction = math.prod(info.extents[d] for d in info.reduction_loops)
    want = target.resident_threads // max(outputs, 1)
    if want < 2 or reduction < 2 * MIN_LANE_ITERATIONS:
        return 1
    if len(info.op.outputs) != 1 or combiner(info.op.body.block) is None:
        return 1
    if not any(_streamed(info, i) for i in range(len(info.op.inputs))):
        return 1  # every input is shared by several outputs: blocking and staging reuse it
    d = info.reduction_loops[-1]  # the innermost of the default order
    limit = min(want, target.threads_per_block, reduction // MIN_LANE_ITERATIONS)
    return divisor_at_most(info.extents[d], limit)


def gpu_default_schedule(info: KernelInfo, target: GpuTarget) -> Schedule:
    """The default schedule of the kernel for `target` (legal for it: checked here)."""
    n = info.num_loops
    unroll, v, width = _register_tile(info, target)
    split = _split(info, target)
    if split > 1:  # one output per lane group, scalar
        unroll = [1 if d in info.parallel_loops else u for d, u in enumerate(unroll)]
        v, width = -1, 1
    tile = [0] * n
    budget = target.threads_per_block // split
    for d in reversed(info.parallel_loops):  # innermost loop first: neighbouring threads
        threads = divisor_at_most(info.extents[d] // unroll[d], budget)
        budget //= threads
        block = threads * unroll[d]
        tile[d] = block if block < info.extents[d] else 0
    order = tuple(info.parallel_loops + info.reduction_loops)
    s = Schedule(tuple(tile), order, tuple(unroll), v, width, split=split)
    if unrolled_bodies(s) > MAX_UNROLLED_BODIES:  # keep the register tile, unroll no reduction
        s = replace(
            s, unroll=tuple(1 if d in info.reduction_loops else u for d, u in enumerate(unroll))
        )
    if info.reduction_loops and not target.cpu_like and math.prod(info.extents) > 1 and split == 1:
        s = _stage(s, info, target)
    check_gpu_schedule(s, info, target)
    return s
