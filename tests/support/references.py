"""The references the tests compare ziggurat with, and the small ONNX models they build."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper


def onnxruntime_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs on the CPU, one thread (the reference of the numeric tests)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def graph_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, int, Any]],
    outputs: Sequence[tuple[str, int]],
    inits: Sequence[tuple[str, Any]] = (),
    opset: int = 17,
) -> onnx.ModelProto:
    """A model of `nodes`: inputs (name, element type, shape), outputs (name, element type;
    shapes left to inference), initializers (name, array)."""
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def assert_outputs_match(
    ours: dict[str, np.ndarray], refs: Sequence[Any], tol: float = 1e-5
) -> None:
    """Every output of a compiled model (name -> array, in order) against the reference's list:
    same count, shapes and dtypes, values within `tol` (relative and absolute)."""
    assert len(ours) == len(refs)
    for (name, o), r in zip(ours.items(), refs, strict=True):
        r = np.asarray(r)
        assert o.shape == r.shape, name
        assert o.dtype == r.dtype, name
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol, err_msg=name)
