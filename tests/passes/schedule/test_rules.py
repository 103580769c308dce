"""passes/schedule/rules.py: what a schedule may be on a given kernel."""

from __future__ import annotations

import pytest

from dialects.sched import Schedule
from passes.schedule.rules import (
    MAX_PANEL_ELEMENTS,
    check_pack,
    check_parallel,
    check_register_tile,
    clamp_to_extents,
    leading_parallel_loops,
    legalize,
    packable,
    panel_shape,
    unrolled_bodies,
    vectorizable_along,
)
from tests.support.schedule_kernels import ADD, RELU, kernel, matmul

_, MATMUL = kernel(matmul())  # 64 x 64 outputs, 128 reduction iterations


def sched(tile=(0, 0, 0), order=(0, 1, 2), unroll=(1, 1, 1), **kw) -> Schedule:
    return Schedule(tuple(tile), tuple(order), tuple(unroll), **kw)


def test_only_parallel_loops_of_an_elementwise_body_are_vectorizable() -> None:
    assert [vectorizable_along(MATMUL, d) for d in range(3)] == [True, True, False]
    _, add = kernel(ADD)
    assert vectorizable_along(add, 0) and vectorizable_along(add, 1)


def test_a_comparison_of_lane_values_keeps_the_kernel_scalar() -> None:
    _, relu = kernel(RELU)
    assert not vectorizable_along(relu, 0) and not vectorizable_along(relu, 1)


def test_register_tile_counts_vectors_once_and_has_a_limit() -> None:
    assert unrolled_bodies(sched(unroll=(8, 32, 2), vector=1, width=16)) == 8 * 2 * 2
    check_register_tile(sched(unroll=(8, 32, 2), vector=1, width=16))
    with pytest.raises(ValueError, match="holds 16384 copies of the body; at most 4096"):
        check_register_tile(sched(unroll=(64, 64, 64), vector=1, width=16))


def test_sizes_past_the_extent_are_cut_and_the_vector_tile_stays_a_multiple_of_the_width() -> None:
    s = clamp_to_extents(
        sched(tile=(1000, 0, 129), unroll=(100, 96, 1000), vector=1, width=48), MATMUL
    )
    assert s.tile == (64, 0, 128)
    assert s.unroll == (64, 96, 128)  # 64 elements round up to two vectors of 48


def test_legalize_checks_the_shape_then_clamps() -> None:
    assert legalize(sched(tile=(0, 1000, 64)), MATMUL).tile == (0, 64, 64)
    with pytest.raises(ValueError, match="not a permutation"):
        legalize(sched(order=(0, 0, 1)), MATMUL)
    with pytest.raises(ValueError, match="copies of the body"):
        legalize(sched(unroll=(64, 64, 64), vector=1, width=16), MATMUL)


def test_panel_is_the_box_one_cache_tile_reads() -> None:
    s = sched(tile=(16, 32, 32), pack=(1,))
    assert panel_shape(MATMUL, 0, s) == [16, 32]  # A: i x k
    assert panel_shape(MATMUL, 1, s) == [32, 32]  # B: k x j
    check_pack(s, MATMUL)


def test_only_inputs_with_panels_that_fit_can_be_packed() -> None:
    assert packable(MATMUL, 0) and packable(MATMUL, 1) and not packable(MATMUL, 2)
    with pytest.raises(ValueError, match=r"option 'operands': 2 is out of range; allowed: 0\.\.1"):
        check_pack(sched(pack=(2,)), MATMUL)
    assert 128 * 64 <= MAX_PANEL_ELEMENTS
    check_pack(sched(pack=(1,)), MATMUL)  # B untiled: a 128 x 64 panel fits
    _, wide = kernel(matmul(64, 1024, 64))
    with pytest.raises(ValueError, match="a panel of 65536 elements"):
        check_pack(sched(pack=(1,)), wide)


def test_threads_take_the_leading_parallel_loops_only() -> None:
    assert leading_parallel_loops(MATMUL, (0, 1, 2)) == 2
    assert leading_parallel_loops(MATMUL, (0, 2, 1)) == 1
    assert leading_parallel_loops(MATMUL, (2, 0, 1)) == 0
    check_parallel(sched(parallel=2), MATMUL)
    with pytest.raises(ValueError, match="loop 2 is a reduction"):
        check_parallel(sched(order=(0, 2, 1), parallel=2), MATMUL)
