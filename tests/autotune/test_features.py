"""autotune/features.py: fixed-length, finite, hand-checkable features, fast enough to search."""

from __future__ import annotations

import functools
import random
from dataclasses import replace

import numpy as np
import onnx
import pytest

from autotune.features import FEATURE_LENGTH, FEATURE_NAMES, features
from autotune.space import SearchSpace
from autotune.task import anchor_info, extract_tasks
from compiler import zoo
from dialects.sched import Schedule

WIDTH = 16


def matmul_model(n: int) -> onnx.ModelProto:
    """A plain n x n x n matmul kernel: B a graph input (a constant B would be stored as panels
    by pack-weights, making the kernel a batched product)."""
    return zoo.matmul(n)


@functools.cache
def matmul_info():
    (task,) = [t for t in extract_tasks(matmul_model(64)) if t.name.startswith("matmul")]
    return anchor_info(task)


@functools.cache
def conv_info():
    task = next(t for t in extract_tasks(zoo.small_cnn()) if t.name.startswith("conv "))
    return anchor_info(task)


def f(row: np.ndarray, name: str) -> float:
    return float(row[FEATURE_NAMES.index(name)])


def test_names_unique_and_length_fixed() -> None:
    assert len(set(FEATURE_NAMES)) == FEATURE_LENGTH
    rng = random.Random(0)
    for info in (matmul_info(), conv_info()):
        space = SearchSpace(info, WIDTH)
        X = features(info, [space.to_schedule(space.sample(rng)) for _ in range(200)])
        assert X.shape == (200, FEATURE_LENGTH) and X.dtype == np.float32
        assert np.isfinite(X).all()
        assert X.std(axis=0).max() > 0  # configs are told apart
    assert features(matmul_info(), []).shape == (0, FEATURE_LENGTH)


def test_hand_computed_matmul_64() -> None:
    info = matmul_info()
    assert info.extents == [64, 64, 64] and info.iterators == ["parallel", "parallel", "reduction"]
    s = Schedule(tile=(0, 0, 16), order=(0, 1, 2), unroll=(4, 32, 2), vector=1, width=16)
    (row,) = features(info, [s])
    assert f(row, "loop0_log2_extent") == 6
    assert f(row, "loop0_log2_point_trips") == 4  # 64 / 4
    assert f(row, "loop1_log2_point_trips") == 1  # 64 / 32
    assert f(row, "loop2_log2_tile_trips") == 2  # 64 / 16
    assert f(row, "loop2_log2_point_trips") == 3  # 16 / unroll 2
    assert f(row, "loop1_is_vector") == 1 and f(row, "loop2_is_reduction") == 1
    assert f(row, "accumulators") == 8  # 4 rows x 2 vectors of 16
    assert f(row, "vector_width") == 16
    assert f(row, "lane_utilization_extent") == 1.0 and f(row, "lane_utilization_reg") == 1.0
    assert f(row, "reduction_unroll") == 2
    assert f(row, "log2_reduction_per_accumulator_load") == 4  # 16 per reduction tile
    # one step: A varies with i only (4 broadcasts), B with j only (2 contiguous vectors)
    assert f(row, "loads_per_accumulator") == 6 / 8
    assert f(row, "operand0_vec_broadcast") == 1 and f(row, "operand1_vec_contiguous") == 1
    assert f(row, "operand2_vec_contiguous") == 1
    # cache tile: A 64x16, B 16x64, C 64x64 floats
    ws = (64 * 16 + 16 * 64 + 64 * 64) * 4
    assert np.isclose(f(row, "log2_working_set_cache_tile"), np.log2(ws))
    assert f(row, "working_set_fits_l1") == 1  # 24 KiB
    (untiled,) = features(info, [Schedule((0, 0, 0), (0, 1, 2), (4, 32, 2), 1, 16)])
    assert (
        f(untiled, "working_set_fits_l1") == 0 and f(untiled, "working_set_fits_l2") == 1
    )  # 48 KiB
    assert np.isclose(f(row, "operand0_log2_bytes_reg_tile"), np.log2(4 * 16 * 4))  # A: 4 rows x 16
    assert f(row, "num_tiled_loops") == 1 and f(row, "num_remainder_splits") == 0
    # scalar code has no vector features
    (scalar,) = features(info, [Schedule((0, 0, 0), (0, 1, 2), (1, 1, 1))])
    assert f(scalar, "vectorized") == 0 and f(scalar, "accumulators") == 1
    assert f(scalar, "operand0_vec_gather") == 0 and f(scalar, "loads_per_accumulator") == 2


def test_many_conv_schedules_at_once() -> None:
    """The search scores thousands of configs per batch (its rate is benchmarked in
    tests/bench/bench_features.py, not asserted here)."""
    info = conv_info()
    space = SearchSpace(info, WIDTH)
    rng = random.Random(0)
    schedules = [space.to_schedule(space.sample(rng)) for _ in range(4000)]
    X = features(info, schedules)
    assert X.shape == (4000, FEATURE_LENGTH) and np.isfinite(X).all()
    assert np.array_equal(X[:10], features(info, schedules[:10]))  # rows do not depend on the batch


def test_parallel_features() -> None:
    info = matmul_info()
    base = Schedule((16, 32, 0), (0, 1, 2), (4, 32, 2), 1, 16)
    rows = features(info, [base, replace(base, parallel=1), replace(base, parallel=2)])
    assert [f(r, "parallel_loops") for r in rows] == [0, 1, 2]
    extents = info.extents
    chunks = [2 ** f(r, "log2_parallel_chunks") for r in rows]
    assert chunks == pytest.approx([1, extents[0] / 16, extents[0] / 16 * extents[1] / 32])
