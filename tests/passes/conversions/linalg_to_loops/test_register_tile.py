"""passes/conversions/linalg_to_loops/register_tile.py: the points of a register tile, one
accumulator per (position, vector chunk)."""

from __future__ import annotations

from dialects.sched import Schedule
from tests.support.linalg_to_loops_kernels import matmul_generator


def test_register_tile_points_chunk_the_vector_loop() -> None:
    gen = matmul_generator(Schedule((0, 0, 0), (0, 1, 2), (2, 16, 1), vector=1, width=8))
    points = gen.register_tile.points([(None, 0), (None, 0), (None, 0)], [2, 20, 5])
    # two rows, each 8 + 8 + 4 lanes of n; the reduction loop contributes one point
    assert [(pos[0][1], pos[1][1], width) for pos, width in points] == [
        (0, 0, 8),
        (0, 8, 8),
        (0, 16, 4),
        (1, 0, 8),
        (1, 8, 8),
        (1, 16, 4),
    ]


def test_scalar_register_tile_has_one_lane_per_point() -> None:
    gen = matmul_generator(Schedule((0, 0, 0), (0, 1, 2), (1, 3, 1)))
    points = gen.register_tile.points([(None, 2), (None, 0), (None, 0)], [1, 3, 5])
    assert [(pos[0][1], pos[1][1], width) for pos, width in points] == [
        (2, 0, 1),
        (2, 1, 1),
        (2, 2, 1),
    ]
