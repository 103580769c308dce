"""Whether a box of an array, read at its memory strides, can stay in a set-associative cache.

A tile sized to half a cache still misses when its rows are a large power of two apart: every
row then starts in the same few sets, and those sets hold only `ways` lines each (a 512 x 256
f32 tile of a 1024-wide matrix uses a quarter of a 1 MiB L2's sets). Packing the tile into a
contiguous panel is the cure; `crowds_cache` tells the default schedule when it is needed (it
packs a tile that would need more lines in some set than the set has ways).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passes.schedule.cpu_target import CacheLevel

MAX_ROWS = 1 << 20
"""Boxes with more rows than this are not modelled (no default tile is that large)."""


def lines_per_set(
    box: Sequence[int], strides: Sequence[int], cache: CacheLevel, itemsize: int = 4
) -> int:
    """The most distinct cache lines of the box that map to one set of `cache`: the box holds
    indices 0..box[d]-1 along each memref dimension d, `strides` in elements."""
    if not box or any(b <= 0 for b in box):
        return 0
    *outer, inner = box
    rows = int(np.prod(outer)) if outer else 1
    if rows > MAX_ROWS:
        return 0
    starts = np.zeros(1, dtype=np.int64)
    for extent, stride in zip(outer, strides[:-1], strict=True):
        starts = (starts[:, None] + np.arange(extent, dtype=np.int64) * stride).ravel()
    starts *= itemsize
    if strides[-1] == 1:  # a contiguous row: the lines between its first and last byte
        first = starts // cache.line
        last = (starts + inner * itemsize - 1) // cache.line
        candidates = first[:, None] + np.arange(int((last - first).max()) + 1)
        lines = candidates[candidates <= last[:, None]]
    else:
        offsets = np.arange(inner, dtype=np.int64) * strides[-1] * itemsize
        lines = ((starts[:, None] + offsets) // cache.line).ravel()
    sets = np.unique(lines) % cache.sets
    return int(np.bincount(sets).max())


def crowds_cache(
    box: Sequence[int], strides: Sequence[int], cache: CacheLevel, share: float = 0.5
) -> bool:
    """True when some set would need more than `share` of its ways for the box: the box, though
    no larger than `share` of the cache, would not stay in it as laid out."""
    return lines_per_set(box, strides, cache) > share * cache.ways
