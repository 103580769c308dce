"""Dims known only at run time: what the importer keeps as `?` instead of a size.

A model compiled once for all sizes of its symbolic dims (compiler/symbolic_model.py) is imported
with RUN_TIME in `input_shapes` where a symbol stands; its tensors then carry `?` dims through the
graph, tensor, buffer and loop levels, and @main takes each `?` size as an argument.

Only the operators below may read a tensor with `?` dims: their shape rules, lowerings and kernels
are tested at run-time sizes (tests/compiler/test_run_time_dims.py, and the transformer set in
tests/test_transformer_models.py). Any other is refused by name at import, so a model is never
miscompiled; it is then compiled per size as before. The shape arithmetic exporters emit is
taken two ways: a Reshape or Expand target computed from the input's sizes is bound to constants
before the import (shape_binding.py); a value that is data (a Range's bounds) is computed when
the model runs (Shape of a `?` tensor is graph.shape, Range between run-time bounds graph.range).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DYNAMIC_INDEX

RUN_TIME = DYNAMIC_INDEX
"""An input dim known only at run time (MLIR's `?`, xDSL's DYNAMIC_INDEX)."""

RUN_TIME_DIM_OPS = frozenset(
    {
        "MatMul",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Relu",
        "Sigmoid",
        "Tanh",
        "Exp",
        "Neg",
        "Abs",
        "Sqrt",
        "Erf",
        "Identity",
        "Gemm",
        "Softmax",
        "LogSoftmax",
        "LayerNormalization",
        "Transpose",
        "Max",
        "Min",
        "Clip",
        "Pow",
        "LeakyRelu",
        "HardSigmoid",
        "Softplus",
        "Log",
        "Reciprocal",
        "ReduceMean",
        "ReduceMax",
        "ReduceMin",
        "Shape",
        "Gather",
        "Unsqueeze",
        "Squeeze",
        "Reshape",
        "Cast",
        "Equal",
        "Less",
        "LessOrEqual",
        "Greater",
        "GreaterOrEqual",
        "And",
        "Or",
        "Not",
        "Where",
        "Cos",
        "Sin",
        "Expand",
        "Split",
        "Slice",
        "Concat",
    }
)
"""Operators compiled for tensors with run-time dims."""
