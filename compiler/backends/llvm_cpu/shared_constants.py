"""One copy per process of each distinct large constant that compiled code is bound to.

A model with symbolic dims is compiled once per size (compiler/symbolic_model.py), and every
specialization binds the same weights: GPT-2 held another 620 MB of them for each size it had
seen. Constants are keyed by their content (dtype, element count, SHA-256 of the bytes), so the
programs of one process share whatever they have in common, whichever model or compile made it.

The table holds weak references: an array lives as long as some program binds it. Shared arrays
are read-only; only globals the IR declares constant are shared (code may write the others).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable

import numpy as np

from compiler.runtime import aligned_copy

_lock = threading.RLock()  # reentrant: a weak reference's callback may run inside `with _lock`
_table: dict[tuple[str, int, str], weakref.ref[np.ndarray]] = {}


def _key(flat: np.ndarray) -> tuple[str, int, str]:
    """The table's key of a contiguous 1-D array."""
    return flat.dtype.str, flat.size, hashlib.sha256(flat.view(np.uint8).data).hexdigest()


def shared_constant(data: np.ndarray) -> np.ndarray:
    """A read-only, 64-byte-aligned flat array equal to `data`: the one a live program of this
    process is already bound to, else a new aligned copy that later calls will share."""
    flat = np.ascontiguousarray(data).reshape(-1)
    key = _key(flat)
    with _lock:
        ref = _table.get(key)
        held = ref() if ref is not None else None
        if held is not None:
            return held
        copy = aligned_copy(flat, align=64)
        copy.setflags(write=False)
        _table[key] = weakref.ref(copy, _forgetter(key))
        return copy


def _forgetter(key: tuple[str, int, str]) -> Callable[[weakref.ref[np.ndarray]], None]:
    """The weak reference's callback: drop the entry once dead (a new array may have taken it)."""

    def forget(_: weakref.ref[np.ndarray]) -> None:
        with _lock:
            ref = _table.get(key)
            if ref is not None and ref() is None:
                del _table[key]

    return forget


def live_constants() -> int:
    """How many distinct shared constants programs of this process are bound to now."""
    with _lock:
        return sum(1 for ref in _table.values() if ref() is not None)
