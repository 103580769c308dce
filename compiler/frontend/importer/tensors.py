"""ONNX element types and tensors: which element types the frontend accepts and which graph types
compute them (TENSOR_TYPES, GRAPH_ELEMENTS, WIDENED_ELEMENTS, BOUNDARY_ELEMENTS), the element limit
per tensor, and an initializer's TensorProto decoded and checked (`tensor_array`). Apart because
these are tables and checks of the ONNX format, used by the importer, the converters and
compiler/frontend/onnx.py alike."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute

from compiler.frontend.errors import FrontendError

MAX_ELEMENTS = 2**31
"""The most elements a tensor may have (declared, stored or computed); checked before any
allocation, so a declared 2**40 dimension is an error, not an exhausted machine."""


def check_elements(shape: Sequence[int], what: str, limit: int = MAX_ELEMENTS) -> None:
    """Refuse a tensor of more than `limit` elements (before anything of that size exists); a
    run-time dim (negative: run_time_dims.RUN_TIME) counts as one."""
    n = math.prod(int(d) for d in shape if int(d) >= 0)
    if n > limit:
        raise FrontendError(
            f"{what} has shape {[int(d) for d in shape]} ({n} elements), over the limit of "
            f"2**{limit.bit_length() - 1} = {limit} elements per tensor"
        )


# element type -> numpy type, for the tensor types the frontend accepts in initializers
TENSOR_TYPES: dict[int, type] = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.UINT16: np.uint16,
    onnx.TensorProto.UINT32: np.uint32,
    onnx.TensorProto.UINT64: np.uint64,
}


# ONNX element type -> the graph element type of tensors of that type at run time
GRAPH_ELEMENTS: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}


CAST_TARGETS: dict[int, str] = {k: str(v) for k, v in GRAPH_ELEMENTS.items()}
"""ONNX element type -> the name graph.cast takes (`f32`, `i64`, ...)."""


WIDENED_ELEMENTS: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT16: f32,
    onnx.TensorProto.INT8: i32,
    onnx.TensorProto.UINT8: i32,
    onnx.TensorProto.INT16: i32,
    onnx.TensorProto.UINT16: i32,
    onnx.TensorProto.UINT32: i64,
}
"""Model input and output element types computed in a wider graph type: the integers exactly
(every value fits), float16 in float32 (so results are rounded once, at the output, instead of
after every operation). The compiled model takes and returns the declared type
(dialects/attributes.py's DTYPE_ATTR records it)."""


BOUNDARY_ELEMENTS: dict[int, Attribute] = {**GRAPH_ELEMENTS, **WIDENED_ELEMENTS}
"""Every element type a model input or output may have -> the graph type computing it."""


SUPPORTED_ELEMENTS = (
    "FLOAT, INT64, INT32 and BOOL, and FLOAT16, INT8, UINT8, INT16, UINT16 and UINT32 "
    "(computed in float32, int32 or int64)"
)


# where a tensor without raw_data keeps its values (one per element for these types)
_DATA_FIELDS: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float_data",
    onnx.TensorProto.DOUBLE: "double_data",
    onnx.TensorProto.INT64: "int64_data",
    onnx.TensorProto.UINT32: "uint64_data",
    onnx.TensorProto.UINT64: "uint64_data",
}


def type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"<unknown data type {elem_type}>"


def tensor_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """The value of a TensorProto, once its type, dims and data are checked to agree."""
    name = type_name(t.data_type)
    if t.data_type not in TENSOR_TYPES:
        raise FrontendError(f"{what} has element type {name}, which is not supported")
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FrontendError(f"{what} has a negative dimension: dims {dims}")
    check_elements(dims, what)
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raise FrontendError(
            f"{what} keeps its data in an external file; load the model from "
            "its path so the file can be found (and checked)"
        )
    n = math.prod(dims)
    dtype = np.dtype(TENSOR_TYPES[t.data_type])
    if t.HasField("raw_data"):
        if len(t.raw_data) != n * dtype.itemsize:
            raise FrontendError(
                f"{what} has {len(t.raw_data)} bytes of raw_data, but dims {dims} of {name} "
                f"need {n * dtype.itemsize}"
            )
    else:
        field = _DATA_FIELDS.get(t.data_type, "int32_data")
        have = len(getattr(t, field))
        if have != n:
            raise FrontendError(f"{what} has {have} values in {field}, but dims {dims} need {n}")
    try:
        return np.asarray(numpy_helper.to_array(t), dtype=dtype)
    except (ValueError, TypeError, OverflowError) as e:
        raise FrontendError(f"{what} has data that cannot be decoded: {e}") from e
