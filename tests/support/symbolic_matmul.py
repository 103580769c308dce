"""y = x @ w with a symbolic batch: the smallest model whose sizes share a weight (x [batch, 64],
w [64, 48], 12 KB: bound to the code, not inlined into it)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def symbolic_matmul(seed: int = 0) -> onnx.ModelProto:
    w = np.random.default_rng(seed).standard_normal((64, 48)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "symbolic_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 48])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def weight(model: onnx.ModelProto) -> np.ndarray:
    """The model's w."""
    return numpy_helper.to_array(model.graph.initializer[0])
