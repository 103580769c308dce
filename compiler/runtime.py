"""Aligned buffers and timing for calling compiled code (any back end: host-side numpy only).

Generated code assumes 64-byte-aligned buffers (levels.md @main ABI); numpy only guarantees 16.
Imports no xDSL: the tuner's runner process uses it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import DTypeLike


def aligned_empty(
    shape: int | Sequence[int], dtype: DTypeLike = np.float32, align: int = 64
) -> np.ndarray:
    """An uninitialized C-contiguous array whose data pointer is a multiple of `align`."""
    shape_t = (shape,) if isinstance(shape, int) else tuple(shape)
    dt = np.dtype(dtype)
    # at least one element: a zero-size buffer still gets a valid, aligned data pointer
    nbytes = max(int(np.prod(shape_t, dtype=np.int64)), 1) * dt.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    shift = (-raw.ctypes.data) % align
    return (
        raw[shift : shift + nbytes]
        .view(dt)[: int(np.prod(shape_t, dtype=np.int64))]
        .reshape(shape_t)
    )


def aligned_zeros(
    shape: int | Sequence[int], dtype: DTypeLike = np.float32, align: int = 64
) -> np.ndarray:
    out = aligned_empty(shape, dtype, align)
    out[...] = 0
    return out


def aligned_copy(array: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous, `align`-byte-aligned copy of `array` (same dtype and shape)."""
    out = aligned_empty(array.shape, array.dtype, align)
    out[...] = array
    return out


def is_aligned(array: np.ndarray, align: int = 64) -> bool:
    return array.ctypes.data % align == 0


def time_calls(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> list[float]:
    """The mean time of `number` calls, in seconds, for each of `repeat` runs."""
    number = max(number, 1)
    costs = []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        costs.append((time.perf_counter() - start) / number)
    return costs


def time_call(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Minimum over `repeat` runs of the mean time of `number` calls, in seconds."""
    return min(time_calls(fn, repeat, number))
