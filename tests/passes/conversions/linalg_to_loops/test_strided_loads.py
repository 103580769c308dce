"""Stride-2 vector loads (operand_io.py): two overlapping vector loads and one shuffle instead of
a lane-by-lane gather, for the input of a stride-2 convolution or pooling window; checked in the
IR, against onnxruntime on the CPU, and printed as C on the OpenCL path (PoCL)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.backends.gpu.opencl_runtime import opencl_available
from compiler.model import compile_model, import_model, lower
from tests.support.references import onnxruntime_run


def strided(op: str, channels: int = 8, hw: int = 64) -> onnx.ModelProto:
    """A 3x3 stride-2 depthwise convolution or max pool (ResNet's stem pool) over
    1 x channels x hw x hw, padded by 1: 32 output columns, two 16-lane vectors."""
    inits = []
    if op == "Conv":
        w = np.random.default_rng(0).standard_normal((channels, 1, 3, 3)).astype(np.float32)
        inits = [numpy_helper.from_array(w, "w")]
        node = helper.make_node(
            "Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[1] * 4, group=channels
        )
    else:
        node = helper.make_node(
            "MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    graph = helper.make_graph(
        [node],
        "strided",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {"x": np.random.default_rng(1).standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize("op", ["Conv", "MaxPool"])
def test_stride_two_inputs_load_as_two_vectors_and_a_shuffle(op: str) -> None:
    model = strided(op)
    loops = str(lower(import_model(model), "loops", layout="NCHW"))  # lanes along rows
    assert "vector.shuffle" in loops
    compiled = compile_model(model, layout="NCHW")
    x = feeds(model)
    np.testing.assert_allclose(
        list(compiled.run(x).values())[0], onnxruntime_run(model, x)[0], rtol=1e-5, atol=1e-5
    )


@pytest.mark.skipif(opencl_available() is not None, reason=f"OpenCL: {opencl_available()}")
def test_the_shuffle_prints_as_opencl_c_and_runs_on_pocl() -> None:
    model = strided("Conv")
    compiled = compile_model(model, target="opencl", preset="opencl-cpu")
    x = feeds(model)
    np.testing.assert_allclose(
        list(compiled.run(x).values())[0], onnxruntime_run(model, x)[0], rtol=1e-5, atol=1e-5
    )
