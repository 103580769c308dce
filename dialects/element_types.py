"""MLIR element type names <-> numpy dtypes: the one table.

The element types a buffer or a dense constant can hold, as MLIR spells them (`f32`, `i64`,
`i1`...; integer names whatever the signedness), and the numpy dtype of an array of them. The
names are also the jit's scalar type names (compiler/backends/llvm_cpu/jit.py).

Imports numpy only, no xDSL: the tuner's runner process loads it (through the jit) and must
start quickly. The xDSL side (builtin types, dense attributes) is `dialects.dense`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ELEMENT_DTYPES: dict[str, np.dtype[Any]] = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
"""Element type (as MLIR spells it) <-> the numpy dtype of a buffer of such elements."""

_ELEMENT_TYPES: dict[np.dtype[Any], str] = {dtype: name for name, dtype in ELEMENT_DTYPES.items()}


def element_dtype(element: str) -> np.dtype[Any]:
    """The numpy dtype of elements of type `element` (`f32`, `i64`, `i1`...)."""
    try:
        return ELEMENT_DTYPES[element]
    except KeyError:
        raise ValueError(f"no numpy dtype for memref elements of type {element}") from None


def element_type(dtype: Any) -> str:
    """The element type name of numpy dtype `dtype` (the inverse of `element_dtype`)."""
    try:
        return _ELEMENT_TYPES[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"no memref element type for numpy dtype {np.dtype(dtype)}") from None
