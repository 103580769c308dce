"""Analytic features of (kernel, GPU schedule) pairs for the cost model, as features.py is for
the CPU: derived from the anchor's KernelInfo, the `Schedule` values (read with gpu_rules.py's
meanings) and the target description, never from IR, so the search scores thousands per second.

What they describe is what decides a GPU kernel's speed: how many threads and blocks it launches
against what the device holds at once (waves, occupancy), whether neighbouring threads read
neighbouring addresses (coalescing), how much each thread and each block moves from global
memory per reduction step (register tiles and staging reuse it), and the work between barriers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.gpu_rules import gpu_mapping, staged_bytes
from passes.schedule.gpu_target import GpuTarget
from passes.schedule.reduction_split import split_loop

MAX_OPERANDS = 4
"""Operands described (inputs first, the output last)."""
DEFAULT_RESIDENT_THREADS = 65536
"""Threads in flight on a device whose target does not say (a mid-size GPU)."""
SM_THREADS = 2048
"""Resident threads per multiprocessor (NVIDIA since Volta)."""
SM_SHARED_BYTES = 228 * 1024
"""Workgroup memory per multiprocessor of a SIMT target (Hopper); a CPU-like one gets 4 blocks'."""
SM_REGISTERS = 65536
"""32-bit registers per multiprocessor, shared by its resident threads' accumulators."""
WARP = 32

_OPERAND_FEATURES = (
    "present",
    "contiguous",  # neighbouring threads read neighbouring elements (coalesced)
    "broadcast",  # they read the same element
    "strided",  # they read elements apart
    "log2_thread_stride",  # elements between neighbouring threads' first addresses
    "staged",
    "log2_bytes_thread_step",  # global bytes one thread reads (the output: writes) per step
)
_GLOBAL_FEATURES = (
    "log2_threads",
    "log2_blocks",
    "log2_waves",
    "wave_efficiency",
    "warp_efficiency",
    "log2_resident_blocks",
    "occupancy",
    "log2_shared_bytes",
    "log2_neighbour_threads",
    "vector_width",
    "vectorized",
    "log2_accumulators",
    "log2_reduction_unroll",
    "log2_staging_depth",
    "log2_reduction_steps",
    "log2_split",
    "log2_reduction_per_thread",
    "log2_iterations_per_thread",
    "log2_arith_intensity",  # body iterations per global byte a block moves (staging counted)
    "log2_iterations",
    "cpu_like",
)

GPU_FEATURE_NAMES: tuple[str, ...] = (
    *(f"operand{i}_{f}" for i in range(MAX_OPERANDS) for f in _OPERAND_FEATURES),
    *_GLOBAL_FEATURES,
)
GPU_FEATURE_LENGTH = len(GPU_FEATURE_NAMES)


def _log2(x: np.ndarray) -> np.ndarray:
    return np.log2(np.maximum(x, 1.0))


def _element_bytes(info: KernelInfo, i: int) -> int:
    elem = getattr(info.accesses[i].value.type, "element_type", None)
    return max(getattr(elem, "bitwidth", 32) // 8, 1)


def _operands(info: KernelInfo) -> list[int]:
    """The operands described: the first inputs and the output."""
    idx = list(range(len(info.accesses)))
    return idx if len(idx) <= MAX_OPERANDS else [*idx[: MAX_OPERANDS - 1], idx[-1]]


def _elements(coefs: np.ndarray, shape: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Elements an access touches over boxes (N, loops): per map result, its span, capped by
    the dimension."""
    if coefs.size == 0:
        return np.ones(box.shape[0])
    span = (box - 1.0) @ np.abs(coefs).T + 1.0
    return np.minimum(span, shape[None, :]).prod(axis=1)


def _neighbours(s: Schedule, info: KernelInfo, threads: tuple[int, ...]) -> tuple[int, int, int]:
    """(loop, threads along it, iterations between neighbouring threads) of the loop that
    neighbouring threads walk: a split's interleaved lanes, else the innermost parallel loop
    with several threads (threads take register tiles of it); loop -1 with one thread."""
    if s.split > 1:
        return split_loop(s, info), s.split, 1
    for d in reversed(s.order):
        if info.iterators[d] == "parallel" and threads[d] > 1:
            return d, threads[d], s.unroll[d]
    return -1, 1, 1


def gpu_features(info: KernelInfo, schedules: Sequence[Schedule], target: GpuTarget) -> np.ndarray:
    """(len(schedules), GPU_FEATURE_LENGTH) float32 features of the anchor under each schedule
    (each legal on `target`: check_gpu_schedule)."""
    N, n = len(schedules), info.num_loops
    out = np.zeros((N, GPU_FEATURE_LENGTH), dtype=np.float32)
    if N == 0:
        return out
    # the mapping, workgroup bytes and neighbour loop of each schedule (gpu_rules' own rules)
    block_tile = np.ones((N, n))
    grid, block, shared = np.ones(N), np.ones(N), np.zeros(N)
    nb_loop = np.full(N, -1)
    nb_threads, nb_step = np.ones(N), np.ones(N)
    for k, s in enumerate(schedules):
        m = gpu_mapping(s, info)
        block_tile[k] = m.block_tile
        grid[k], block[k], shared[k] = m.grid, m.block, staged_bytes(s, info)
        nb_loop[k], nb_threads[k], nb_step[k] = _neighbours(s, info, m.threads)
    U = np.array([s.unroll for s in schedules], dtype=np.float64)
    V = np.array([s.vector for s in schedules])
    W = np.array([s.width for s in schedules], dtype=np.float64)
    split = np.array([s.split for s in schedules], dtype=np.float64)
    E = np.asarray(info.extents, dtype=np.float64)[None, :]
    is_par = np.array([it == "parallel" for it in info.iterators])
    red = info.reduction_loops
    rows = np.arange(N)

    accumulators = np.where(is_par[None, :], U, 1.0).prod(axis=1)
    depth = np.where(is_par[None, :], 1.0, block_tile).prod(axis=1)  # iterations per step
    reduction = float(np.prod(E[0, ~is_par]))
    steps = reduction / depth
    # one step of one thread: its register tile and the staging depth (a lane: 1/split of it)
    thread_box = np.where(is_par[None, :], U, block_tile)
    split_rows = split > 1
    # a split's lanes are the neighbours: nb_loop is the split loop
    thread_box[rows[split_rows], nb_loop[split_rows]] /= split[split_rows]
    has_nb = nb_loop >= 0

    block_bytes = np.zeros(N)  # global bytes one block moves over its whole run
    described = _operands(info)
    no = len(_OPERAND_FEATURES)
    for i, a in enumerate(info.accesses):
        coefs = np.asarray(a.coefs, dtype=np.float64).reshape(len(a.coefs), n)
        shape = np.asarray(a.shape, dtype=np.float64)
        nbytes = _element_bytes(info, i)
        staged = np.array([i in s.pack for s in schedules])
        per_thread = _elements(coefs, shape, thread_box) * nbytes
        per_block = _elements(coefs, shape, block_tile) * nbytes  # a staged box, one step
        if a.is_output:
            block_bytes += per_block
        else:
            block_bytes += np.where(staged, per_block, per_thread * block) * steps
        if i not in described:
            continue
        # loop -1 (no neighbours) reads the 0 appended; a scalar is the same for every thread
        strides = np.abs(np.array([*a.loop_strides, 0], dtype=np.float64))
        stride = np.zeros(N) if a.is_scalar else strides[nb_loop]
        base = described.index(i) * no
        cols = [
            np.ones(N),
            has_nb & (stride == 1),
            has_nb & (stride == 0),
            has_nb & (stride > 1),
            _log2(stride * nb_step),
            staged,
            _log2(np.where(staged, per_block / block, per_thread)),
        ]
        out[:, base : base + no] = np.stack(cols, axis=1)

    resident = target.resident_threads or DEFAULT_RESIDENT_THREADS
    waves = grid * block / resident
    sm_shared = target.shared_bytes * 4 if target.cpu_like else SM_SHARED_BYTES
    by_shared = np.where(shared > 0, sm_shared // np.maximum(shared, 1.0), np.inf)
    resident_blocks = np.maximum(
        np.minimum.reduce([SM_THREADS // block, by_shared, SM_REGISTERS // (accumulators * block)]),
        1.0,
    )
    red_unroll = U[:, red[-1]] if red else np.ones(N)
    total = float(np.prod(E))
    iterations_per_block = total / grid
    glob = [
        _log2(block),
        _log2(grid),
        np.log2(waves),
        waves / np.ceil(waves),
        block / (WARP * np.ceil(block / WARP)),
        _log2(resident_blocks),
        np.minimum(resident_blocks * block / SM_THREADS, 1.0),
        _log2(shared),
        _log2(nb_threads),
        W,
        V >= 0,
        _log2(accumulators),
        _log2(red_unroll),
        _log2(depth),
        _log2(steps),
        _log2(split),
        _log2(reduction / split),
        _log2(total / (grid * block)),
        np.log2(iterations_per_block / np.maximum(block_bytes, 1.0)),
        np.full(N, math.log2(max(total, 1.0))),
        np.full(N, float(target.cpu_like)),
    ]
    col = MAX_OPERANDS * no
    out[:, col:] = np.stack(glob, axis=1)
    return out


__all__ = ["GPU_FEATURE_LENGTH", "GPU_FEATURE_NAMES", "gpu_features"]
