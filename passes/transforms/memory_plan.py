"""Static memory planning: place buffers with known sizes and live intervals in one arena.

Kept apart from bufferization so that planners (bump, greedy reuse, later interval-graph
colouring) can be swapped and tested on plain numbers without any IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ALIGNMENT = 64


@dataclass(frozen=True)
class BufferRequest:
    """One buffer: its size in bytes and its live interval [start, end] in op order (inclusive)."""

    size: int
    start: int
    end: int

    def overlaps(self, other: BufferRequest) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class MemoryPlan:
    """Byte offsets (64-byte aligned), one per request, and the arena size they need."""

    offsets: tuple[int, ...]
    arena_bytes: int
    total_bytes: int


def align_up(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


def plan_bump(requests: Sequence[BufferRequest]) -> MemoryPlan:
    """Every buffer gets its own memory: the reference planner, no reuse."""
    offsets: list[int] = []
    top = 0
    for r in requests:
        offsets.append(top)
        top += align_up(r.size)
    return MemoryPlan(tuple(offsets), top, sum(r.size for r in requests))


def plan_greedy_by_size(requests: Sequence[BufferRequest]) -> MemoryPlan:
    """Greedy-by-size reuse (as in TFLite's arena planner).

    Largest buffers are placed first, each at the lowest aligned offset that does not collide
    with an already placed buffer whose live interval overlaps its own.
    """
    order = sorted(range(len(requests)), key=lambda i: (-requests[i].size, requests[i].start, i))
    offsets = [0] * len(requests)
    placed: list[int] = []
    arena = 0
    for i in order:
        r = requests[i]
        size = align_up(r.size)
        busy = sorted(
            (offsets[j], offsets[j] + align_up(requests[j].size))
            for j in placed
            if requests[j].overlaps(r)
        )
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        offsets[i] = offset
        placed.append(i)
        arena = max(arena, offset + size)
    return MemoryPlan(tuple(offsets), arena, sum(r.size for r in requests))


PLANNERS = {"bump": plan_bump, "greedy": plan_greedy_by_size}


def check_plan(requests: Sequence[BufferRequest], plan: MemoryPlan) -> None:
    """Raise if two simultaneously live buffers share bytes or an offset is misaligned."""
    for i, (ri, oi) in enumerate(zip(requests, plan.offsets, strict=True)):
        if oi % ALIGNMENT:
            raise ValueError(f"buffer {i} at unaligned offset {oi}")
        if oi + ri.size > plan.arena_bytes:
            raise ValueError(f"buffer {i} exceeds the arena")
        for j in range(i):
            rj, oj = requests[j], plan.offsets[j]
            if ri.overlaps(rj) and oi < oj + rj.size and oj < oi + ri.size:
                raise ValueError(f"buffers {j} and {i} are live together and overlap")
