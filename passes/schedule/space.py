"""The candidates of each schedule knob on one kernel: what the tuner searches.

One function per knob, named after it. Each returns the values worth trying for that knob
alone; autotune/space.py combines them under the constraints between knobs (the accumulator
budget, tiles that are multiples of register tiles, panels that fit). Every candidate is a
value the corresponding schedule pass accepts on this kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.rules import (
    leading_parallel_loops,
    packable,
    reduction_vector_problem,
    vectorizable_along,
)

MAX_TILE_CANDIDATES = 8
"""Cache-tile candidates per loop, spread over its divisors."""
MIN_TILED_REDUCTION = 8
"""A reduction loop shorter than this is never cache-tiled."""
SMALL_REG = (1, 2, 3, 4, 6, 8)
"""Register tiles of a scalar loop tried whether or not they divide the extent."""
MAX_REG = 24
"""The largest divisor of the extent tried as a scalar loop's register tile."""
MAX_VECTORS = 8
"""The most vectors in the vector loop's register tile."""
REDUCTION_UNROLLS = (1, 2, 4, 8)
"""Unroll factors tried for the innermost reduction loop."""


def divisors(n: int) -> list[int]:
    """The divisors of n, ascending."""
    return [k for k in range(1, n + 1) if n % k == 0]


def spread(values: list[int], limit: int) -> list[int]:
    """At most `limit` of the sorted `values`, evenly spread (the ends kept)."""
    if len(values) <= limit:
        return values
    idx = sorted({round(i * (len(values) - 1) / (limit - 1)) for i in range(limit)})
    return [values[i] for i in idx]


def vector_space(info: KernelInfo, reduction_width: int = 0) -> list[int]:
    """`vectorize{dim}`: -1 (scalar) or a parallel loop the body can run as lanes; with a
    `reduction_width` (the CPU's) also the innermost reduction loop where it holds a whole
    vector and its partials can be combined (rules.reduction_vector_problem)."""
    loops = [d for d in info.parallel_loops if info.extents[d] >= 2 and vectorizable_along(info, d)]
    if reduction_width and info.reduction_loops:
        r = info.reduction_loops[-1]
        if info.extents[r] >= reduction_width and reduction_vector_problem(info, r) is None:
            loops.append(r)
    return [-1, *loops]


@dataclass(frozen=True)
class RegisterTileSpace:
    """`unroll-jam`'s knobs: the register tile of each parallel loop (as a scalar loop, and as
    the vector loop, where it counts elements), and the unroll of the innermost reduction."""

    scalar: dict[int, list[int]]
    vector: dict[int, list[int]]
    reduction_unrolls: list[int]


def register_tile_space(
    info: KernelInfo, width: int, default: Schedule, max_accumulators: int
) -> RegisterTileSpace:
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
        # the tuner's unroll counts vectors along a reduction vector loop
        u.add(default.unroll[reductions[-1]] // (width if default.vector == reductions[-1] else 1))
        unrolls = sorted(u)
    else:
        unrolls = [1]
    return RegisterTileSpace(scalar, vector, unrolls)


def tile_space(info: KernelInfo, defaults: Sequence[Schedule] = ()) -> dict[int, list[int]]:
    """`tile{sizes}` per loop (0, untiled, is always allowed besides): proper divisors of the
    extent, evenly thinned out, plus the tiles the given default schedules use. Short
    reductions are never tiled."""
    out: dict[int, list[int]] = {}
    for d, e in enumerate(info.extents):
        if info.iterators[d] == "reduction" and e < MIN_TILED_REDUCTION:
            cands: list[int] = []
        else:
            cands = spread([k for k in divisors(e) if 1 < k < e], MAX_TILE_CANDIDATES)
        for s in defaults:
            if 0 < s.tile[d] < e and s.tile[d] not in cands:
                cands = sorted([*cands, s.tile[d]])
        out[d] = cands
    return out


def order_space(info: KernelInfo) -> list[list[int]]:
    """`interchange{order}`: parallel loops in their order, the reduction loops (in theirs)
    inserted at one position (the orders that matter for reuse of the register tile)."""
    p, r = info.parallel_loops, info.reduction_loops
    if not r:
        return [list(range(info.num_loops))]
    return [p[:k] + r + p[k:] for k in range(len(p) + 1)]


def pack_space(info: KernelInfo) -> list[list[int]]:
    """`pack{operands}`: none, or any subset of the (at most two) packable multi-dimensional
    inputs. Whether a panel fits depends on the tiles: see rules.check_pack."""
    cands = [
        i
        for i in range(len(info.op.inputs))
        if packable(info, i) and len(info.accesses[i].shape) > 1
    ][:2]
    return [[], *([i] for i in cands), *([cands] if len(cands) == 2 else [])]


def parallel_space(info: KernelInfo, order: list[int], threads: int) -> list[int]:
    """`parallelize{loops}` with this order: up to its leading parallel loops ([0] on one
    thread)."""
    if threads <= 1:
        return [0]
    return list(range(leading_parallel_loops(info, order) + 1))
