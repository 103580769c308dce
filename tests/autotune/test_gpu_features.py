"""autotune/gpu_features.py: fixed-length, finite features that move the way a GPU kernel's
speed does (threads, coalescing, staging, splits), fast enough to search."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from autotune.gpu_features import GPU_FEATURE_LENGTH, GPU_FEATURE_NAMES, gpu_features
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.gpu_rules import check_gpu_schedule
from passes.schedule.gpu_target import gpu_target
from tests.autotune.test_gpu_space import KERNELS, TARGETS, info_of, space_of
from tests.support.schedule_kernels import kernel, rows

CUDA = gpu_target("cuda")


def f(info: KernelInfo, s: Schedule, name: str, target=CUDA) -> float:
    """One feature of one schedule (checked legal first: features describe legal schedules)."""
    check_gpu_schedule(s, info, target)
    return float(gpu_features(info, [s], target)[0, GPU_FEATURE_NAMES.index(name)])


def mm(tile: tuple[int, int, int], unroll: tuple[int, int, int], **kw) -> Schedule:
    """A schedule of the 64x64x128 matmul (loops i, j, k)."""
    return Schedule(tile, (0, 1, 2), unroll, **kw)


def test_names_are_unique_and_the_length_fixed() -> None:
    assert len(set(GPU_FEATURE_NAMES)) == GPU_FEATURE_LENGTH
    assert gpu_features(info_of("matmul"), [], CUDA).shape == (0, GPU_FEATURE_LENGTH)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_shape_and_finite_over_the_space(name: str, target: str) -> None:
    space, rng = space_of(name, target), random.Random(0)
    schedules = [space.to_schedule(space.sample(rng)) for _ in range(200)]
    X = gpu_features(info_of(name), schedules, gpu_target(target))
    assert X.shape == (200, GPU_FEATURE_LENGTH) and X.dtype == np.float32
    assert np.isfinite(X).all()
    assert (X.std(axis=0) > 0).sum() > 20  # the knobs move many features
    occupancy = X[:, GPU_FEATURE_NAMES.index("occupancy")]
    assert ((occupancy > 0) & (occupancy <= 1)).all()


def test_a_search_batch_at_once() -> None:
    """2,000 schedules in one call, as the search scores them (the rate is benchmarked in
    tests/bench/bench_features.py, not asserted here)."""
    space, rng = space_of("matmul", "cuda"), random.Random(0)
    schedules = [space.to_schedule(space.sample(rng)) for _ in range(2000)]
    X = gpu_features(info_of("matmul"), schedules, CUDA)
    assert X.shape == (2000, GPU_FEATURE_LENGTH) and np.isfinite(X).all()
    assert np.array_equal(X[:5], gpu_features(info_of("matmul"), schedules[:5], CUDA))


def test_threads_blocks_and_waves() -> None:
    info = info_of("matmul")
    few, many = mm((16, 16, 0), (4, 4, 1)), mm((64, 64, 0), (4, 4, 1))  # 16 vs 256 threads
    assert f(info, few, "log2_threads") == 4 and f(info, many, "log2_threads") == 8
    assert f(info, few, "log2_blocks") == 4 and f(info, many, "log2_blocks") == 0
    assert f(info, few, "warp_efficiency") == 0.5 and f(info, many, "warp_efficiency") == 1
    # the same 256 threads in both: as many waves (of 64K threads)
    assert f(info, few, "log2_waves") == f(info, many, "log2_waves") == -8
    big_tile = mm((64, 64, 0), (8, 8, 1))  # 64 threads of 64 accumulators
    assert f(info, big_tile, "log2_accumulators") == 6
    assert f(info, big_tile, "log2_iterations_per_thread") > f(
        info, many, "log2_iterations_per_thread"
    )


def test_staging_takes_workgroup_memory_and_saves_global_reads() -> None:
    info = info_of("matmul")
    plain = mm((64, 64, 32), (4, 4, 1))
    staged = replace(plain, pack=(0, 1))
    assert f(info, plain, "log2_shared_bytes") == 0
    assert f(info, staged, "log2_shared_bytes") == np.log2(2 * 64 * 32 * 4)
    assert f(info, staged, "operand0_staged") == 1 and f(info, plain, "operand0_staged") == 0
    assert f(info, staged, "log2_arith_intensity") > f(info, plain, "log2_arith_intensity")
    # a thread copies its share of the block's box instead of reading its own rows
    assert f(info, staged, "operand0_log2_bytes_thread_step") < f(
        info, plain, "operand0_log2_bytes_thread_step"
    )
    assert f(info, staged, "occupancy") <= f(info, plain, "occupancy")
    assert f(info, staged, "log2_staging_depth") == 5
    assert f(info, staged, "log2_reduction_steps") == 2


def test_coalescing_follows_the_loop_neighbouring_threads_walk() -> None:
    info = info_of("matmul")  # A[i, k] (operand 0), B[k, j] (1), C[i, j] (2)
    along_j = mm((1, 64, 0), (1, 1, 1))  # 64 threads along j
    along_i = mm((64, 1, 0), (1, 1, 1))  # 64 threads along i
    assert f(info, along_j, "operand1_contiguous") == 1
    assert f(info, along_j, "operand0_broadcast") == 1
    assert f(info, along_j, "operand2_contiguous") == 1
    assert f(info, along_i, "operand1_broadcast") == 1
    assert f(info, along_i, "operand0_contiguous") == 0
    assert f(info, along_i, "operand0_strided") == 1
    assert f(info, along_i, "operand0_log2_thread_stride") == 7  # rows of 128
    assert f(info, along_i, "log2_neighbour_threads") == 6
    # a register tile along j spreads neighbouring threads apart
    tiled = mm((1, 64, 0), (1, 4, 1))
    assert f(info, tiled, "operand1_contiguous") == 1
    assert f(info, tiled, "operand1_log2_thread_stride") == 2
    # one thread per block: nobody to coalesce with
    alone = mm((1, 1, 0), (1, 1, 1))
    assert all(
        f(info, alone, f"operand{i}_{k}") == 0
        for i in range(3)
        for k in ("contiguous", "broadcast", "strided")
    )


def test_a_split_coalesces_along_the_reduction() -> None:
    info = kernel(rows(64, 1024))[1]  # x[i, j] (operand 0), y[i] (1)
    split = Schedule((1, 0), (0, 1), (1, 1), split=256)
    unsplit = Schedule((64, 0), (0, 1), (1, 1))  # one thread per row
    assert f(info, split, "operand0_contiguous") == 1
    assert f(info, split, "operand1_broadcast") == 1
    assert f(info, split, "log2_split") == 8
    assert f(info, split, "log2_reduction_per_thread") == 2
    assert f(info, split, "log2_shared_bytes") == np.log2(256 * 4)  # the partials
    assert f(info, unsplit, "operand0_strided") == 1
    assert f(info, unsplit, "log2_reduction_per_thread") == 10
    assert f(info, split, "log2_blocks") > f(info, unsplit, "log2_blocks")


def test_vectors_and_the_cpu_device() -> None:
    target = gpu_target("opencl-cpu")
    info, width = info_of("matmul"), max(target.vector_widths)  # the host's
    vec = mm((0, 0, 0), (4, 16, 1), vector=1, width=width)
    scalar = mm((0, 0, 0), (4, 16, 1))
    assert f(info, vec, "vector_width", target) == width
    assert f(info, vec, "vectorized", target) == 1
    assert f(info, scalar, "vectorized", target) == 0
    assert f(info, vec, "cpu_like", target) == 1 and f(info, scalar, "cpu_like") == 0
