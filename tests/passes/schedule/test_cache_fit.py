"""passes/schedule/cache_fit.py: whether a strided box stays in a set-associative cache."""

from __future__ import annotations

from passes.schedule.cache_fit import crowds_cache, lines_per_set
from passes.schedule.cpu_target import CacheLevel

L2 = CacheLevel(1 << 20, 8)  # 2048 sets of 8 lines


def _brute_force(box, strides, cache: CacheLevel) -> int:
    """Lines per set by enumerating every element."""
    lines: set[int] = set()

    def walk(d: int, offset: int) -> None:
        if d == len(box):
            lines.add(offset * 4 // cache.line)
            return
        for i in range(box[d]):
            walk(d + 1, offset + i * strides[d])

    walk(0, 0)
    counts: dict[int, int] = {}
    for line in lines:
        counts[line % cache.sets] = counts.get(line % cache.sets, 0) + 1
    return max(counts.values())


def test_a_contiguous_box_spreads_over_every_set() -> None:
    # 512 x 256 f32 = 512 KiB: half the cache, 4 lines per set
    assert lines_per_set([512, 256], [256, 1], L2) == 4
    assert not crowds_cache([512, 256], [256, 1], L2)


def test_power_of_two_row_strides_crowd_a_few_sets() -> None:
    # the same tile of a 1024-wide matrix: rows 4 KiB apart start in 32 set groups only
    assert lines_per_set([512, 256], [1024, 1], L2) == 16
    assert crowds_cache([512, 256], [1024, 1], L2)
    # a quarter of the cache: a power-of-two stride still crowds, an odd one spreads the rows
    assert crowds_cache([256, 256], [1024, 1], L2)
    assert not crowds_cache([256, 256], [1000, 1], L2)


def test_matches_brute_force_on_small_boxes() -> None:
    small = CacheLevel(4096, 4)  # 16 sets
    for box, strides in (
        ([3, 5, 7], [70, 10, 1]),
        ([4, 33], [64, 1]),
        ([2, 3, 4], [96, 32, 2]),  # a strided innermost dimension
        ([6, 6], [5, 1]),  # overlapping rows share lines
    ):
        assert lines_per_set(box, strides, small) == _brute_force(box, strides, small), box


def test_empty_boxes_hold_nothing() -> None:
    assert lines_per_set([], [], L2) == 0
    assert lines_per_set([0, 4], [4, 1], L2) == 0
