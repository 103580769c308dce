"""passes/schedule/knobs.py: each knob's edit, and what it rejects on the kernel."""

from __future__ import annotations

import pytest

from dialects.sched import Schedule
from passes.schedule.knobs import (
    set_order,
    set_pack,
    set_parallel,
    set_tile,
    set_unroll,
    set_vector,
)
from tests.support.schedule_kernels import conv, kernel, matmul, rows

_, INFO = kernel(matmul())
S = Schedule((0, 0, 0), (0, 1, 2), (8, 32, 1), 1, 16)


def test_per_loop_knobs_need_one_value_per_loop() -> None:
    assert set_tile(S, INFO, (8, 16, 32)).tile == (8, 16, 32)
    with pytest.raises(ValueError, match=r"expected 3 tile sizes \(one per loop\), got 2"):
        set_tile(S, INFO, (8, 16))
    with pytest.raises(ValueError, match="expected 3 unroll factors"):
        set_unroll(S, INFO, (1, 16, 1, 1))


def test_order_is_a_permutation() -> None:
    assert set_order(S, INFO, (2, 0, 1)).order == (2, 0, 1)
    with pytest.raises(ValueError, match="option 'order': 0,0,1 is not a permutation"):
        set_order(S, INFO, (0, 0, 1))


def test_the_vector_loops_register_tile_counts_elements() -> None:
    assert set_unroll(S, INFO, (4, 48, 2)).unroll == (4, 48, 2)
    with pytest.raises(ValueError, match="40 .* is not a multiple of the vector width 16"):
        set_unroll(S, INFO, (4, 40, 2))


def test_moving_the_vector_loop_converts_both_register_tiles() -> None:
    s = set_vector(S, INFO, 0, 8)
    # loop 1 held 32 elements = 2 vectors -> 2 iterations; loop 0's 8 iterations -> 8 elements
    assert (s.vector, s.width, s.unroll) == (0, 8, (8, 2, 1))
    assert set_vector(S, INFO, 1, 64).unroll == (8, 64, 1)  # rounded up to one vector
    scalar = set_vector(S, INFO, -1, 0)
    assert (scalar.vector, scalar.width, scalar.unroll) == (-1, 1, S.unroll)


def test_vectorize_rejects_missing_loops_and_reductions_it_cannot_reassociate() -> None:
    with pytest.raises(ValueError, match="option 'dim': loop 3 does not exist; allowed: -1..2"):
        set_vector(S, INFO, 3, 8)
    # the matmul's k loop combines with an add: lanes along it are partial sums
    assert set_vector(S, INFO, 2, 8).vector == 2
    _, sub = kernel(rows(8, 64, "%s = arith.subf %a, %acc : f32"))
    scalar = Schedule((0, 0), (0, 1), (1, 1), -1, 1)
    with pytest.raises(ValueError, match="reduction loop 1 cannot be vectorized: the body"):
        set_vector(scalar, sub, 1, 8)
    # lanes along a reduction loop with another inside it: only the innermost one of the order
    _, cv = kernel(conv())
    six = Schedule((0,) * 6, tuple(range(6)), (1,) * 6, -1, 1)
    assert set_vector(six, cv, 5, 8).vector == 5
    with pytest.raises(ValueError, match=r"not the innermost reduction loop of the order \(5 is\)"):
        set_vector(six, cv, 4, 8)


def test_pack_and_parallel_follow_the_rules() -> None:
    assert set_pack(S, INFO, (0, 1)).pack == (0, 1)
    with pytest.raises(ValueError, match="option 'operands': 2 is out of range"):
        set_pack(S, INFO, (2,))
    assert set_parallel(S, INFO, 2).parallel == 2
    with pytest.raises(ValueError, match=r"option 'loops': 4 is out of range; allowed: 0\.\.3"):
        set_parallel(S, INFO, 4)
    with pytest.raises(ValueError, match="loop 2 is a reduction"):
        set_parallel(S, INFO, 3)
