"""`fork_map`: a function over a list in forked worker processes, the one process pool of the
project (the kernel compiler and the tuner's builder both use it).

Forking lets the workers inherit the function and its inputs (xDSL modules, closures) instead
of pickling them; only results travel back. Without `fork`, with one worker or one item, the
map runs in this process.
"""

from __future__ import annotations

import gc
import multiprocessing
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M")

_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # inherited by the workers


def _run(index: int) -> Any:
    assert _WORK is not None, "fork_map's work is set before the workers fork"
    fn, items = _WORK
    return fn(items[index])


def fork_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    timeout_s: float | None = None,
    on_timeout: Callable[[T], R] | None = None,
) -> list[R]:
    """[fn(x) for x in items], computed by up to `workers` forked processes.

    With `timeout_s`, the whole map gets `timeout_s` per round of `workers` items; an item not
    done by then is `on_timeout(item)` (required with a timeout) and its worker is killed."""
    global _WORK
    if workers <= 1 or len(items) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items]
    if timeout_s is not None and on_timeout is None:
        raise ValueError("fork_map: a timeout needs on_timeout to stand in for late items")
    _WORK = (fn, items)
    pool = multiprocessing.get_context("fork").Pool(min(workers, len(items)))
    try:
        pending = [pool.apply_async(_run, (i,)) for i in range(len(items))]
        if timeout_s is None:
            return [p.get() for p in pending]
        deadline = time.monotonic() + timeout_s * max(1, len(items) // workers + 1)
        out: list[R] = []
        for item, p in zip(items, pending, strict=True):
            try:
                out.append(p.get(max(0.0, deadline - time.monotonic())))
            except multiprocessing.TimeoutError:
                assert on_timeout is not None
                out.append(on_timeout(item))
        return out
    finally:
        pool.terminate()
        pool.join()
        _WORK = None


def fork_map_meanwhile(
    fn: Callable[[T], R], items: Sequence[T], workers: int, meanwhile: Callable[[], M]
) -> tuple[list[R], M]:
    """([fn(x) for x in items], meanwhile()): the map in up to `workers` forked processes
    (items handed out in order, so put the longest first), `meanwhile` in this process while
    they run. The workers fork before `meanwhile` starts: what it changes they do not see."""
    global _WORK
    if workers <= 1 or not items or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items], meanwhile()
    _WORK = (fn, items)
    # what exists now is the workers' inheritance: frozen, their collections never scan it
    # (nor touch its pages, which stay shared)
    gc.freeze()
    try:
        pool = multiprocessing.get_context("fork").Pool(min(workers, len(items)))
    finally:
        gc.unfreeze()
    try:
        pending = [pool.apply_async(_run, (i,)) for i in range(len(items))]
        done = meanwhile()
        return [p.get() for p in pending], done
    finally:
        pool.terminate()
        pool.join()
        _WORK = None
