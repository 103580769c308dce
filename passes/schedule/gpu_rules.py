"""What a `#sched.schedule` means on a GPU, and whether it fits the kernel and the device.

The same attribute as on the CPU, read with GPU meanings (so schedule passes, records and the
tuner's space carry over):

    tile[d]    parallel loop: the block tile (0 = the whole extent); reduction loop: the staging
               depth, iterations per step of the block's reduction loop (0 = all at once)
    unroll[d]  parallel loop: the per-thread register tile; threads along d = block tile / unroll
               reduction loop: unroll factor, as on the CPU
    vector, width   vector accesses along one parallel loop (floatN)
    pack       input operands staged in workgroup memory at each reduction step: every thread of
               the block copies part of the box the block reads, then a barrier
    order      the order of the block's reduction loops (parallel loops are mapped to ids)
    split      threads sharing each output's reduction (reduction_split.py); the block has
               split times as many threads, and a workgroup buffer of their partial results

Every count divides exactly (block tile | extent, register tile | block tile, width | register
tile): shapes are static, so no thread ever needs a bounds check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.gpu_target import GpuTarget
from passes.schedule.reduction_split import check_split
from passes.schedule.rules import check_register_tile, packable, panel_shape


@dataclass(frozen=True)
class GpuMapping:
    """How a kernel's loops map onto blocks and threads (1-D ids, decomposed per loop)."""

    block_tile: tuple[int, ...]
    """Per loop: iterations one block covers (a reduction loop: its staging depth)."""
    blocks: tuple[int, ...]
    """Per loop: blocks along it (1 for reduction loops)."""
    threads: tuple[int, ...]
    """Per loop: threads along it (1 for reduction loops)."""
    split: int = 1
    """Threads per output's reduction (the fastest-varying part of the thread id)."""

    @property
    def grid(self) -> int:
        return math.prod(self.blocks)

    @property
    def block(self) -> int:
        return math.prod(self.threads) * self.split


def gpu_mapping(s: Schedule, info: KernelInfo) -> GpuMapping:
    """The mapping `s` describes (not checked: see check_gpu_schedule)."""
    tile, blocks, threads = [], [], []
    for d, extent in enumerate(info.extents):
        t = s.tile[d] if 0 < s.tile[d] < extent else extent
        tile.append(t)
        parallel = info.iterators[d] == "parallel"
        blocks.append(max(extent // max(t, 1), 1) if parallel else 1)
        threads.append(max(t // max(s.unroll[d], 1), 1) if parallel else 1)
    return GpuMapping(tuple(tile), tuple(blocks), tuple(threads), s.split)


def _element_bytes(info: KernelInfo, i: int) -> int:
    elem = info.accesses[i].value.type.element_type  # type: ignore[attr-defined]
    return max(getattr(elem, "bitwidth", 32) // 8, 1)


def partials_elements(s: Schedule, info: KernelInfo) -> int:
    """Elements of a split reduction's partial-result buffer: one per thread and accumulator."""
    if s.split == 1:
        return 0
    m = gpu_mapping(s, info)
    return m.block * math.prod(s.unroll[d] for d in info.parallel_loops)


def staged_bytes(s: Schedule, info: KernelInfo) -> int:
    """Workgroup memory the kernel takes: staged operands (one box each, at the staging
    depth) and a split reduction's partial results."""
    total = partials_elements(s, info) * _element_bytes(info, len(info.accesses) - 1)
    for i in s.pack:
        total += math.prod(panel_shape(info, i, s)) * _element_bytes(info, i)
    return total


def check_gpu_schedule(s: Schedule, info: KernelInfo, target: GpuTarget) -> GpuMapping:
    """The schedule's mapping; ValueError naming the first rule it breaks."""
    s.check(info.num_loops)
    check_register_tile(s)
    check_split(s, info)
    m = gpu_mapping(s, info)
    for d, extent in enumerate(info.extents):
        if info.iterators[d] != "parallel":
            continue
        if extent % m.block_tile[d]:
            raise ValueError(f"loop {d}: block tile {m.block_tile[d]} does not divide {extent}")
        if m.block_tile[d] % s.unroll[d]:
            raise ValueError(
                f"loop {d}: register tile {s.unroll[d]} does not divide block tile "
                f"{m.block_tile[d]}"
            )
    if s.vector >= 0:
        if info.iterators[s.vector] != "parallel":
            raise ValueError("only parallel loops can be vectorized")
        if s.width not in target.vector_widths:
            raise ValueError(
                f"vector width {s.width} is not one of {list(target.vector_widths)} ({target.name})"
            )
    if m.block > target.max_threads:
        raise ValueError(f"{m.block} threads per block; {target.name} allows {target.max_threads}")
    accumulators = math.prod(s.unroll[d] for d in info.parallel_loops)
    if accumulators > target.max_accumulators:
        raise ValueError(
            f"a register tile of {accumulators} elements per thread; {target.name} keeps at most "
            f"{target.max_accumulators} in registers"
        )
    for i in s.pack:
        if not packable(info, i):
            raise ValueError(f"operand {i} cannot be staged (only input memrefs of the kernel)")
    shared = staged_bytes(s, info)
    if shared > target.shared_bytes:
        raise ValueError(
            f"staged operands {list(s.pack)} and split partials take {shared} bytes of "
            "workgroup memory; "
            f"{target.name} has {target.shared_bytes}"
        )
    return m
