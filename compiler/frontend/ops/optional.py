"""Optional, OptionalHasElement and OptionalGetElement (opsets 15-18) where the optional holds a
tensor or nothing, known at import time.

Optional types are not a graph type here: an optional holding a tensor is the tensor itself,
and whether it holds one is known when the model is imported (the input is given or not). So
OptionalHasElement folds to a constant and OptionalGetElement is the identity; an empty optional
that a later node would have to test at run time is refused."""

from __future__ import annotations

import numpy as np
import onnx

from compiler.frontend.importer import Importer, Value, converter


@converter("Optional")
def convert_optional(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if not imp.has(node, 0):
        raise imp.error(
            "an empty optional (no input) is not supported: optionals are represented by the "
            "tensor they hold"
        )
    return [imp.lookup(node.input[0])]


@converter("OptionalHasElement")
def convert_optional_has_element(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """True when an input is given (a tensor, or an optional built from one), False when the
    input is missing or named ''."""
    if imp.has(node, 0):
        imp.lookup(node.input[0])  # defined, or a clear error
    return [np.array(imp.has(node, 0))]


@converter("OptionalGetElement")
def convert_optional_get_element(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if not imp.has(node, 0):
        raise imp.error("has no input: there is no element to get")
    return [imp.lookup(node.input[0])]
