"""The analytic default schedule of a kernel: the tuner's starting point, and what a kernel
without a `#sched.schedule` is lowered with.

The heuristic reads the access strides of passes/analysis/kernel_access.py: vectorize the
parallel loop that makes the inner (reduction) step cheapest and wastes the fewest lanes, build a
register tile with a second parallel loop that reuses the vector operands, keep the accumulators
in registers across the reduction loops, and tile long reductions for the cache.
`parallel_schedule` then spreads the outer loops of a large kernel over threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.rules import vectorizable_along
from passes.schedule.target import host_vector_width

MAX_ACCUMULATORS = 16
"""The default's register-tile budget in vector accumulators (the tuner explores more)."""
REDUCTION_TILE = 512
"""Reduction iterations per cache tile: one step's working set stays in cache."""
VECTOR_LOOP_TILE = 256
"""Cache tile of a long vector loop in a reduction kernel."""
MAX_REDUCTION_UNROLL = 8
"""An innermost reduction loop this short (a conv window row) is unrolled completely."""

MIN_PARALLEL_ITERATIONS = 1 << 15
"""Kernels with fewer loop iterations than this stay sequential: waking the pool costs more."""
CHUNKS_PER_THREAD = 4
"""Cache tiles per thread that parallel_schedule aims for (slack for uneven tiles)."""


def _divisor_at_most(n: int, limit: int) -> int:
    best = 1
    for k in range(1, min(n, limit) + 1):
        if n % k == 0:
            best = k
    return best


@dataclass(frozen=True)
class _VectorChoice:
    dim: int
    score: float


def _choose_vector_loop(info: KernelInfo, width: int) -> _VectorChoice | None:
    """The parallel loop whose vectorization costs the fewest loads per useful lane, or None
    when scalar code is cheaper."""
    red = math.prod(info.extents[d] for d in info.reduction_loops) if info.reduction_loops else 1
    inputs = [a for a in info.accesses if not a.is_output]
    scalar = (len(inputs) + 1.0) * width
    best: _VectorChoice | None = None
    for d in info.parallel_loops:
        if info.extents[d] < 2 or not vectorizable_along(info, d):
            continue
        cost_in = sum(
            0.25 if a.invariant_to(d) else 1.0 if a.contiguous_along(d) else float(width)
            for a in inputs
        )
        out = info.output
        cost_out = (
            (1.0 if out.contiguous_along(d) else 2.0 * width) * (2.0 if red > 1 else 1.0) / red
        )
        n = info.extents[d]
        utilization = n / (math.ceil(n / width) * width)
        score = (cost_in + cost_out + 1.0) / utilization
        if score < scalar and (best is None or score < best.score):
            best = _VectorChoice(d, score)
    return best


def default_schedule(info: KernelInfo, width: int | None = None) -> Schedule:
    """The sequential default schedule of the kernel for `width` f32 lanes (None: the host's)."""
    width = width or host_vector_width()
    n = info.num_loops
    extents = info.extents
    tile = [0] * n
    unroll = [1] * n
    has_reduction = bool(info.reduction_loops)
    choice = _choose_vector_loop(info, width)
    v = choice.dim if choice else -1
    if v >= 0:
        vectors = math.ceil(extents[v] / width)
        nvec = min(vectors, 2 if has_reduction else 4)
        unroll[v] = nvec * width
        if extents[v] > VECTOR_LOOP_TILE and has_reduction:
            tile[v] = VECTOR_LOOP_TILE
    else:
        nvec = 1
    if has_reduction:
        # second register-tile loop: the one that leaves the fewest loads per accumulator at
        # each reduction step (an input invariant to it is loaded once and reused from
        # registers, one varying along it once per row of the tile; a load is a vector when the
        # input varies along the vector loop, a broadcast otherwise), innermost first on ties
        others = [d for d in info.parallel_loops if d != v and extents[d] > 1]
        if others:
            inputs = [a for a in info.accesses if not a.is_output and not a.is_scalar]
            budget = max(1, MAX_ACCUMULATORS // nvec)

            def loads_per_accumulator(d: int) -> float:
                rows = _divisor_at_most(extents[d], budget)
                loads = sum(
                    (1 if a.invariant_to(d) else rows) * (1 if v < 0 or a.invariant_to(v) else nvec)
                    for a in inputs
                )
                return loads / (rows * nvec)

            u = min(others, key=lambda d: (loads_per_accumulator(d), -d))
            unroll[u] = _divisor_at_most(extents[u], budget)
            if unroll[u] < 3 and extents[u] > 3:  # awkward extent: accept a remainder tile
                unroll[u] = min(extents[u], max(1, MAX_ACCUMULATORS // nvec))
        # tile the reduction so one step's working set stays in cache
        rest = math.prod(extents[d] for d in info.reduction_loops)
        for d in info.reduction_loops:
            if rest <= REDUCTION_TILE:
                break
            inner = rest // extents[d]
            t = max(1, REDUCTION_TILE // max(inner, 1))
            t = _divisor_at_most(extents[d], t) if extents[d] % t else t
            if t < extents[d]:
                tile[d] = t
                rest = inner * t
        # a short innermost reduction loop (a conv window row) is unrolled: its loop overhead
        # would otherwise rival the FMAs of one step
        last = info.reduction_loops[-1]
        if extents[last] <= MAX_REDUCTION_UNROLL and v >= 0:
            unroll[last] = extents[last]
    order = info.parallel_loops + info.reduction_loops
    return Schedule(tuple(tile), tuple(order), tuple(unroll), v, width if v >= 0 else 1)


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
