"""The boundary of a compiled model: what @main takes and gives, and the checks on both sides.

One module for CompiledModel (compiler/model.py) and a loaded package (compiler/package/), so
that a model run from a package checks its inputs, and shapes its outputs, exactly as the model
it was saved from. Imports numpy and compiler.errors only: the package runtime loads without
xDSL or ONNX.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.errors import InputError

RUN_TIME_DIM = -(2**63)
"""A dim known only at run time in a TensorSpec's shape: MLIR's `?` (xDSL's DYNAMIC_INDEX, the
same value; this module imports no xDSL). @main then takes its size as an argument."""


def fits(shape: Sequence[int], spec: Sequence[int]) -> bool:
    """Whether an array of `shape` is what a spec of shape `spec` takes (any size for `?`)."""
    return len(shape) == len(spec) and all(
        d == RUN_TIME_DIM or int(n) == d for n, d in zip(shape, spec, strict=True)
    )


def spelled(shape: Sequence[int]) -> str:
    """A spec's shape for messages, `?` for a run-time dim."""
    return "[" + ", ".join("?" if d == RUN_TIME_DIM else str(d) for d in shape) + "]"


@dataclass
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    """What the caller passes or gets."""
    compute_dtype: np.dtype | None = None
    """What the machine code reads or writes, where it is wider than `dtype` (float16 computed
    in float32, uint8 in int32, ...): the boundary converts."""

    run_time_axis: int | None = None
    """For an output whose extent along this axis depends on the values (NonZero, ...): the
    buffer is an upper bound, trimmed to the length that the `length_of` result gives."""
    length_of: str | None = None
    """For the hidden i64 scalar result holding that length: the output it belongs to."""
    index_check: str | None = None
    """For a hidden [2] i64 result holding [max(indices), max(-1 - indices)] of indices the inputs
    decide (dialects/attributes.py INDEX_CHECK_ATTR): what reads them, for the error."""
    index_extent: int | None = None
    """With index_check: the extent E of the axis they index; they must lie in [-E, E)."""

    @property
    def hidden(self) -> bool:
        """A result the executable reads and the caller never sees."""
        return self.length_of is not None or self.index_check is not None

    @property
    def run_time_dims(self) -> list[int]:
        """The axes whose size @main takes at run time (`?`)."""
        return [k for k, d in enumerate(self.shape) if d == RUN_TIME_DIM]

    @property
    def buffer_dtype(self) -> np.dtype:
        return self.compute_dtype if self.compute_dtype is not None else self.dtype


def check_inputs(specs: Sequence[TensorSpec], feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The caller's arrays in @main's order, converted to what the code reads; InputError for an
    unknown or missing name, a wrong dtype or a wrong shape."""
    names = [s.name for s in specs]
    unknown = [k for k in feeds if k not in names]
    if unknown:
        raise InputError(f"unknown input name(s) {unknown}; the model's inputs are {names}")
    arrays = []
    for spec in specs:
        if spec.name not in feeds:
            raise InputError(
                f"missing input '{spec.name}' (shape {spelled(spec.shape)}, {spec.dtype})"
            )
        a = np.asarray(feeds[spec.name])
        if a.dtype != spec.dtype:
            raise InputError(
                f"input '{spec.name}' has dtype {a.dtype}; the model expects {spec.dtype}"
            )
        if not fits(a.shape, spec.shape):
            raise InputError(
                f"input '{spec.name}' has shape {list(a.shape)}; the model expects "
                f"{spelled(spec.shape)}"
            )
        arrays.append(a if spec.compute_dtype is None else a.astype(spec.compute_dtype))
    return arrays


def results(specs: Sequence[TensorSpec], outs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The caller's view of @main's result buffers: widened outputs converted to their declared
    type (integers fit; float16 is rounded once), data-dependent outputs trimmed to their
    run-time length, the lengths themselves left out; InputError for a run whose indices fell
    outside what they index (check_indices)."""
    check_indices(specs, outs)
    lengths = {s.length_of: int(o) for s, o in zip(specs, outs) if s.length_of}
    views = {}
    for s, o in zip(specs, outs, strict=True):
        if s.hidden:
            continue
        if s.run_time_axis is not None:
            o = o[(slice(None),) * s.run_time_axis + (slice(0, lengths[s.name]),)]
        views[s.name] = o if s.compute_dtype is None else o.astype(s.dtype)
    return views


def index_error(what: str, extent: int, greatest: int, complement: int) -> str | None:
    """The error for indices whose greatest value and greatest complement (-1 - index) are
    these, read from an axis of `extent`; None when all lie in [-extent, extent) (or there were
    none: both are then the least i64)."""
    if greatest >= extent:
        bad = greatest
    elif complement >= extent:
        bad = -1 - complement
    else:
        return None
    return f"{what} is {bad}, outside [-{extent}, {extent})"


def check_indices(specs: Sequence[TensorSpec], outs: Sequence[np.ndarray]) -> None:
    """InputError for the first index_check result whose indices fell out of range."""
    for s, o in zip(specs, outs, strict=True):
        if s.index_check is not None and s.index_extent is not None:
            message = index_error(s.index_check, s.index_extent, int(o[0]), int(o[1]))
            if message is not None:
                raise InputError(message)
