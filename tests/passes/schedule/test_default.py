"""passes/schedule/default.py: the analytic default is a legal schedule that uses the vector unit."""

from __future__ import annotations

import math

from passes.schedule.default import (
    MIN_PARALLEL_ITERATIONS,
    default_schedule,
    parallel_schedule,
)
from passes.schedule.rules import check_parallel, legalize
from passes.schedule.target import host_vector_width
from tests.support.schedule_kernels import ADD, RELU, kernel, matmul


def test_matmul_vectorizes_the_contiguous_output_loop_with_reductions_innermost() -> None:
    _, info = kernel(matmul())
    s = default_schedule(info, 16)
    assert (s.vector, s.width) == (1, 16)
    assert s.unroll[1] % 16 == 0 and s.unroll[0] > 1  # a register tile of accumulators
    assert s.order == (0, 1, 2)
    assert legalize(s, info) == s


def test_a_body_that_compares_lane_values_gets_scalar_code() -> None:
    _, info = kernel(RELU)
    s = default_schedule(info, 8)
    assert (s.vector, s.width) == (-1, 1)


def test_width_none_is_the_host_width() -> None:
    _, info = kernel(ADD)
    assert default_schedule(info).width == host_vector_width()


def test_one_thread_or_a_small_kernel_stays_sequential() -> None:
    _, info = kernel(matmul())
    s = default_schedule(info, 16)
    assert parallel_schedule(s, info, 1) == s
    _, tiny = kernel(ADD)
    assert math.prod(tiny.extents) < MIN_PARALLEL_ITERATIONS
    t = default_schedule(tiny, 8)
    assert parallel_schedule(t, tiny, 8) == t


def test_large_kernels_spread_leading_parallel_tiles_over_threads() -> None:
    _, info = kernel(matmul(512, 512, 512))
    s = parallel_schedule(default_schedule(info, 16), info, 4)
    assert s.parallel >= 1
    check_parallel(s, info)
    chunks = math.prod(
        info.extents[d] // (s.tile[d] or info.extents[d]) for d in s.order[: s.parallel]
    )
    assert chunks >= 4
    assert legalize(s, info) == s
