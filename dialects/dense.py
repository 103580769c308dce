"""Builtin element types and dense attributes (xDSL) <-> numpy: the one decoder and encoder.

`numpy_dtype` / `builtin_element_type` translate between builtin scalar types (`f32`, `i64`,
`i1`...) and numpy dtypes through the table of `dialects.element_types`; `dense_to_numpy` /
`numpy_to_dense` translate a `DenseIntOrFPElementsAttr` to and from a numpy array straight from
its bytes (weights can be large: never through Python floats).

The payload of a dense attribute is little-endian, one element after the other; a single element
for a larger shape is a splat. An i1 element is a byte, true written as 0xFF (as xDSL's parser
and `DenseIntOrFPElementsAttr.from_list` write it); any non-zero byte reads as true.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import Attribute

from dialects.element_types import element_dtype, element_type

ElementType = IntegerType | Float32Type | Float64Type
"""The builtin scalar types that have a numpy dtype (`dialects.element_types`)."""


def element_type_name(t: Attribute) -> str:
    """A builtin scalar type as the element type table names it: `f32`, `f64`, or `i<width>`
    whatever the signedness. ValueError for any other type."""
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    raise ValueError(f"no element type name for {t}")


def numpy_dtype(t: Attribute) -> np.dtype[Any]:
    """The numpy dtype of a buffer of elements of builtin type `t` (ValueError if none)."""
    try:
        name = element_type_name(t)
    except ValueError:
        raise ValueError(f"no numpy dtype for memref elements of type {t}") from None
    return element_dtype(name)


def builtin_element_type(dtype: Any) -> ElementType:
    """The builtin (signless) element type of numpy dtype `dtype`, the inverse of `numpy_dtype`
    (any byte order). ValueError for a dtype without one."""
    dt = np.dtype(dtype)
    name = element_type(dt.newbyteorder("=") if dt.byteorder in "<>" else dt)
    if name == "f32":
        return f32
    if name == "f64":
        return f64
    return IntegerType(int(name[1:]))


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense attribute as a numpy array of its shape and element dtype, decoded
    from its bytes: a read-only view of the payload where possible, a splat expanded to its
    shape. ValueError for an element type without a numpy dtype."""
    dtype = numpy_dtype(attr.get_element_type())
    raw = attr.data.data
    flat: np.ndarray
    if dtype == np.bool_:
        flat = np.frombuffer(raw, dtype=np.int8) != 0
    else:
        flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
    shape = tuple(attr.get_shape())
    if flat.size == 1 and prod(shape) != 1:
        return np.full(shape, flat[0], dtype=flat.dtype)
    return flat.reshape(shape)


def numpy_to_dense(array: Any) -> DenseIntOrFPElementsAttr:
    """A dense tensor attribute holding `array` (shape and element type from the array: float32
    -> f32, int64 -> i64, bool -> i1...). ValueError for a dtype without an element type."""
    a = np.asarray(array)
    el = builtin_element_type(a.dtype)
    if a.dtype == np.bool_:
        data = np.where(a, -1, 0).astype(np.int8)
    else:
        data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return DenseIntOrFPElementsAttr(TensorType(el, a.shape), BytesAttr(data.tobytes()))
