"""The ONNX import machinery: the element-type tables, the `Importer` (ONNX value name -> SSA
value or import-time numpy constant, node checks against the operator schemas, constant
folding, the driver) and the converter registry (`CONVERTERS`, `@converter`).

Values known at import time (initializers, Constant, Shape of static tensors and any node whose
inputs are all known) stay numpy arrays and are evaluated eagerly, so attribute-like inputs
(Reshape's shape, Slice's starts, ...) are plain numbers when a converter needs them; they
become `graph.constant` only where an op consumes them. The converters live in
compiler/frontend/ops/, one module per operator family.

Subgraphs (If branches, Loop and Scan bodies) are imported inline by `Importer.subgraph`, with
the same converters, in a scope that sees the enclosing graphs' values by name: control flow is
specialized statically (ops/control_flow.py), never kept as a region.

The package splits that machinery by concept: tensors.py (element types, TensorProto decoding),
model_checks.py (opsets, names, node schemas), values.py (the value table), folding.py
(import-time evaluation), attributes.py (node attributes) and graph_walk.py (the `Importer` and
the converter registry). This module re-exports their public names, the import path of the
converters in compiler/frontend/ops/.
"""

from __future__ import annotations

from compiler.frontend.importer.attributes import attrs, text
from compiler.frontend.importer.folding import MAX_FOLDED_ELEMENTS
from compiler.frontend.importer.graph_walk import (
    CONVERTERS,
    MAX_SUBGRAPH_NODES,
    Converter,
    Importer,
    converter,
)
from compiler.frontend.importer.model_checks import (
    MAX_DECLARED_OPSET,
    MIN_OPSET,
    UPGRADE_TO_OPSET,
    check_opsets,
    counted,
)
from compiler.frontend.importer.tensors import (
    BOUNDARY_ELEMENTS,
    CAST_TARGETS,
    GRAPH_ELEMENTS,
    MAX_ELEMENTS,
    SUPPORTED_ELEMENTS,
    TENSOR_TYPES,
    WIDENED_ELEMENTS,
    check_elements,
    tensor_array,
    type_name,
)
from compiler.frontend.importer.values import (
    MAX_COMPOSED_ELEMENTS,
    Value,
    ValueTable,
    element_type_of,
    results,
)

__all__ = [
    "BOUNDARY_ELEMENTS",
    "CAST_TARGETS",
    "CONVERTERS",
    "Converter",
    "GRAPH_ELEMENTS",
    "Importer",
    "MAX_COMPOSED_ELEMENTS",
    "MAX_DECLARED_OPSET",
    "MAX_ELEMENTS",
    "MAX_FOLDED_ELEMENTS",
    "MAX_SUBGRAPH_NODES",
    "MIN_OPSET",
    "SUPPORTED_ELEMENTS",
    "TENSOR_TYPES",
    "UPGRADE_TO_OPSET",
    "Value",
    "ValueTable",
    "WIDENED_ELEMENTS",
    "attrs",
    "check_elements",
    "check_opsets",
    "converter",
    "counted",
    "element_type_of",
    "results",
    "tensor_array",
    "text",
    "type_name",
]
