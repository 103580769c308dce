"""Converters whose results are known at import time or are constants: Constant,
ConstantOfShape, Shape."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    tensor_array,
)


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
    # static shapes: always folded to a constant
    a = attrs(node)
    shape = np.asarray(imp.shape(node.input[0]), dtype=np.int64)
    return [shape[a.get("start", 0) : a.get("end", len(shape))]]
