"""compiler/frontend/onnx_signature.py: a file's graph inputs, outputs and initializer names read
from the wire format without parsing the weights, the same as onnx.load gives; None for what is
not such a file (load_model's errors then)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.onnx_signature import graph_signature


def _model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4]),  # an initializer too
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [w],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def test_matches_onnx_load(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    found = graph_signature(path)
    assert found is not None
    inputs, outputs, inits = found
    proto = onnx.load(path)
    assert inputs == list(proto.graph.input) and outputs == list(proto.graph.output)
    assert inits == {"w"}


def test_weights_in_an_external_file_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path, save_as_external_data=True, size_threshold=0, location="w.bin")
    (tmp_path / "w.bin").unlink()  # the signature does not need it
    found = graph_signature(path)
    assert found is not None and [i.name for i in found[0]] == ["x", "w"] and found[2] == {"w"}


def test_not_a_model_is_none(tmp_path: Path) -> None:
    good = _model().SerializeToString()
    for name, data in [("cut.onnx", good[: len(good) // 2]), ("junk.onnx", b"\xff" * 40)]:
        (tmp_path / name).write_bytes(data)
        assert graph_signature(tmp_path / name) is None
    assert graph_signature(tmp_path / "missing.onnx") is None
