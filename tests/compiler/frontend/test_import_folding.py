"""Import-time constant folding (compiler/frontend/importer/folding.py) computes IEEE results as
onnxruntime does at run time, without numpy's floating-point warnings: T5's relative-position
buckets take log(0) = -inf and drop it with a Where."""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.model import compile_model


def test_log_of_zero_folds_to_minus_inf_without_a_warning() -> None:
    rel = np.array([0.0, 1.0, 4.0, 16.0], np.float32)  # |relative position|, 0 on the diagonal
    nodes = [
        helper.make_node("Log", ["rel"], ["log"]),  # -inf at 0
        helper.make_node("Cast", ["log"], ["bucket"], to=TensorProto.INT64),  # -inf: undefined
        helper.make_node("Equal", ["rel", "zero"], ["small"]),
        helper.make_node("Cast", ["small"], ["small_f"], to=TensorProto.FLOAT),
        helper.make_node("Where", ["small", "zero", "log"], ["safe"]),
        helper.make_node("Add", ["x", "safe"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "buckets",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(rel, "rel"), numpy_helper.from_array(np.float32(0), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(4, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from the folder would fail here
        out = compile_model(model).run({"x": x})["y"]
    with np.errstate(divide="ignore"):
        expected = x + np.where(rel == 0, 0, np.log(rel))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
