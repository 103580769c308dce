"""One edit per schedule knob: the schedule with that knob set, checked against the kernel.

Each schedule pass is one of these edits applied to the kernels it targets
(attached.edit_schedules then legalizes the result). The checks here are the ones that need the
kernel; their messages name the pass option that carries the value, since that is where a user
wrote it. A check fails with ValueError.
"""

from __future__ import annotations

from dataclasses import replace

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.reduction_split import check_split
from passes.schedule.rules import (
    check_pack,
    check_parallel,
    check_vector_loop,
    vectorizable_along,
)
from passes.schedule.target import host_vector_width


def _one_per_loop(values: tuple[int, ...], info: KernelInfo, what: str) -> tuple[int, ...]:
    """`values`, after checking that it has one entry per loop of the kernel."""
    if len(values) != info.num_loops:
        raise ValueError(f"expected {info.num_loops} {what} (one per loop), got {len(values)}")
    return values


def set_tile(s: Schedule, info: KernelInfo, sizes: tuple[int, ...]) -> Schedule:
    """`tile`: cache tile size per loop (0 leaves a loop untiled)."""
    return replace(s, tile=_one_per_loop(sizes, info, "tile sizes"))


def set_order(s: Schedule, info: KernelInfo, order: tuple[int, ...]) -> Schedule:
    """`interchange`: the loop order, outermost first; a permutation of the kernel's loops."""
    order = _one_per_loop(order, info, "loop positions")
    n = info.num_loops
    if sorted(order) != list(range(n)):
        raise ValueError(
            f"option 'order': {','.join(map(str, order))} is not a permutation of the kernel's "
            f"{n} loops (each of 0..{n - 1} once, outermost first)"
        )
    return replace(s, order=order)


def set_unroll(s: Schedule, info: KernelInfo, factors: tuple[int, ...]) -> Schedule:
    """`unroll-jam`: the register tile per loop; the vector loop's counts elements, so it must
    be a multiple of the vector width."""
    factors = _one_per_loop(factors, info, "unroll factors")
    if s.vector >= 0 and factors[s.vector] % s.width:
        raise ValueError(
            f"option 'factors': {factors[s.vector]} (loop {s.vector}, the vector loop: it counts "
            f"elements) is not a multiple of the vector width {s.width}"
        )
    return replace(s, unroll=factors)


def set_vector(s: Schedule, info: KernelInfo, dim: int, width: int) -> Schedule:
    """`vectorize`: loop `dim` as vector lanes of `width` (0: the host's widest), or scalar code
    with dim -1. The vector loop's register tile counts elements: the new one is rounded up to
    a multiple of the width (at least one vector), the old one goes back to counting
    iterations."""
    if dim < 0:
        return replace(s, vector=-1, width=1)
    if dim >= info.num_loops:
        raise ValueError(
            f"option 'dim': loop {dim} does not exist; allowed: -1..{info.num_loops - 1} "
            f"(-1: scalar code; the kernel has {info.num_loops} loops)"
        )
    # a reduction loop is judged with the new order and unroll: check_vector_loop below
    if info.iterators[dim] == "parallel" and not vectorizable_along(info, dim):
        raise ValueError(f"loop {dim} cannot be vectorized (an index or a gather in the body)")
    width = width or host_vector_width()
    unroll = list(s.unroll)
    if s.vector >= 0 and s.vector != dim:
        unroll[s.vector] = max(1, unroll[s.vector] // s.width)
    unroll[dim] = max(width, -(-unroll[dim] // width) * width)
    new = replace(s, vector=dim, width=width, unroll=tuple(unroll))
    check_vector_loop(new, info)
    return new


def set_pack(s: Schedule, info: KernelInfo, operands: tuple[int, ...]) -> Schedule:
    """`pack`: the input operands copied into a contiguous panel per cache tile (empty: none);
    each panel must fit with the schedule's tiles (rules.check_pack)."""
    new = replace(s, pack=operands)
    check_pack(new, info)
    return new


def set_parallel(s: Schedule, info: KernelInfo, loops: int) -> Schedule:
    """`parallelize`: how many outermost loops of the order run across threads (0: none); they
    must all be parallel iterators."""
    if loops > info.num_loops:
        raise ValueError(
            f"option 'loops': {loops} is out of range; allowed: 0..{info.num_loops} "
            f"(the kernel has {info.num_loops} loops)"
        )
    new = replace(s, parallel=loops)
    new.check(info.num_loops)
    check_parallel(new, info)
    return new


def set_split(s: Schedule, info: KernelInfo, threads: int) -> Schedule:
    """`split-reduction`: threads sharing each output's reduction (1: none); a GPU knob whose
    rules are reduction_split.check_split (a split reduction is scalar and unstaged, so
    those knobs are reset here)."""
    if threads == 1:
        return replace(s, split=1)
    tile = tuple(0 if info.iterators[d] == "reduction" else t for d, t in enumerate(s.tile))
    new = replace(s, split=threads, vector=-1, width=1, pack=(), tile=tile)
    if s.vector >= 0:  # the vector loop's register tile goes back to counting iterations
        unroll = list(new.unroll)
        unroll[s.vector] = max(1, unroll[s.vector] // s.width)
        new = replace(new, unroll=tuple(unroll))
    check_split(new, info)
    return new
