"""passes/schedule/space.py: each knob's candidates, all accepted by the knob's edit."""

from __future__ import annotations

from passes.schedule.default import default_schedule
from passes.schedule.knobs import (
    set_order,
    set_pack,
    set_parallel,
    set_tile,
    set_unroll,
    set_vector,
)
from passes.schedule.rules import legalize
from passes.schedule.space import (
    MAX_TILE_CANDIDATES,
    divisors,
    order_space,
    pack_space,
    parallel_space,
    register_tile_space,
    spread,
    tile_space,
    vector_space,
)
from tests.support.schedule_kernels import RELU, kernel, matmul

WIDTH = 16
_, INFO = kernel(matmul())
DEFAULT = default_schedule(INFO, WIDTH)


def test_helpers() -> None:
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert spread(list(range(10)), 4) == [0, 3, 6, 9]
    assert spread([1, 2], 4) == [1, 2]


def test_vector_candidates_are_scalar_or_a_vectorizable_parallel_loop() -> None:
    assert vector_space(INFO) == [-1, 0, 1]
    _, relu = kernel(RELU)
    assert vector_space(relu) == [-1]
    for dim in vector_space(INFO):
        legalize(set_vector(DEFAULT, INFO, dim, WIDTH), INFO)


def test_orders_insert_the_reductions_at_one_position() -> None:
    assert order_space(INFO) == [[2, 0, 1], [0, 2, 1], [0, 1, 2]]
    for order in order_space(INFO):
        legalize(set_order(DEFAULT, INFO, tuple(order)), INFO)


def test_packs_are_subsets_of_the_multidimensional_inputs() -> None:
    assert pack_space(INFO) == [[], [0], [1], [0, 1]]
    tiled = set_tile(DEFAULT, INFO, (16, 32, 32))
    for pack in pack_space(INFO):
        legalize(set_pack(tiled, INFO, tuple(pack)), INFO)


def test_parallel_counts_stop_at_the_first_reduction() -> None:
    assert parallel_space(INFO, [0, 1, 2], 1) == [0]
    assert parallel_space(INFO, [0, 1, 2], 4) == [0, 1, 2]
    assert parallel_space(INFO, [0, 2, 1], 4) == [0, 1]
    for order in order_space(INFO):
        s = set_order(DEFAULT, INFO, tuple(order))
        for loops in parallel_space(INFO, order, 4):
            legalize(set_parallel(s, INFO, loops), INFO)


def test_tiles_are_thinned_proper_divisors_plus_the_defaults() -> None:
    space = tile_space(INFO, [DEFAULT])
    for d, cands in space.items():
        assert len(cands) <= MAX_TILE_CANDIDATES + 1
        assert all(0 < t < INFO.extents[d] for t in cands)
        if 0 < DEFAULT.tile[d] < INFO.extents[d]:
            assert DEFAULT.tile[d] in cands
        for t in cands:
            sizes = tuple(t if e == d else 0 for e in range(INFO.num_loops))
            legalize(set_tile(DEFAULT, INFO, sizes), INFO)


def test_register_tiles_include_the_defaults_and_whole_vectors() -> None:
    regs = register_tile_space(INFO, WIDTH, DEFAULT, 24)
    assert set(regs.scalar) == set(regs.vector) == set(INFO.parallel_loops)
    assert all(r % WIDTH == 0 for cands in regs.vector.values() for r in cands)
    assert DEFAULT.unroll[DEFAULT.vector] in regs.vector[DEFAULT.vector]
    assert DEFAULT.unroll[2] in regs.reduction_unrolls
    vector = DEFAULT.vector
    for r in regs.vector[vector]:
        factors = tuple(r if d == vector else DEFAULT.unroll[d] for d in range(INFO.num_loops))
        legalize(set_unroll(DEFAULT, INFO, factors), INFO)
