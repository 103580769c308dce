"""Converters whose results are known at import time or are constants: Constant,
ConstantOfShape, Shape; and the two that read sizes known only at run time (a model compiled
once for every size): Shape of a tensor with `?` dims, Range between run-time bounds."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    results,
    tensor_array,
)
from compiler.frontend.run_time_dims import RUN_TIME
from dialects import graph as g


@converter("Constant")
def convert_constant(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if len(node.attribute) != 1:
        raise imp.error(f"needs exactly one value attribute, got {len(node.attribute)}")
    a = node.attribute[0]
    v = helper.get_attribute_value(a)
    if a.name == "value":
        return [tensor_array(v, f"Constant node '{imp.label}': attribute 'value'")]
    if a.name in ("value_float", "value_floats"):
        return [np.asarray(v, dtype=np.float32)]
    if a.name in ("value_int", "value_ints"):
        return [np.asarray(v, dtype=np.int64)]
    raise imp.error(f"constant attribute {a.name!r} is not supported")


@converter("ConstantOfShape")
def convert_constant_of_shape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    # reached only when the shape is not constant: everything else is folded
    raise imp.error("input shape must be a constant")


@converter("Shape")
def convert_shape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Static shapes fold to a constant; a shape with run-time dims is read when the model runs
    (graph.shape), then sliced to [start, end)."""
    a = attrs(node)
    dims = imp.shape(node.input[0])
    rank = len(dims)
    start, end = a.get("start", 0), a.get("end", rank)
    start, end = (max(0, min(rank, k + rank if k < 0 else k)) for k in (start, end))
    if RUN_TIME not in dims[start:end]:
        return [np.asarray(dims, dtype=np.int64)[start:end]]
    shape = imp.op(g.ShapeOp(imp.value(node.input[0])))
    if (start, end) == (0, rank):
        return [shape]
    return results(imp.emit(g.SliceOp(shape, starts=[start], ends=[max(start, end)], steps=[1])))


@converter("Range")
def convert_range(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Reached only with a bound known at run time (constant ones fold): graph.range, whose
    length is a run-time dim."""
    bounds = [imp.value(n) for n in node.input[:3]]
    for name, v in zip(node.input[:3], bounds, strict=True):
        if imp.shape_of(v) != ():
            raise imp.error(f"input '{name}' must be a scalar, got shape {list(imp.shape_of(v))}")
    if len({str(element_type_of(v)) for v in bounds}) != 1:
        raise imp.error("start, limit and delta must have one element type")
    return results(imp.emit(g.RangeOp(*bounds)))
