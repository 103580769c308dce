"""Scan-8 models (opset 8, a leading batch axis) upgraded through onnx's version converter
(compiler/frontend/scan8.py): batch 1 keeps the model's signature and matches onnxruntime; what
the converter would get wrong is refused with the reason."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import onnxruntime_run

F = TensorProto.FLOAT


def scan_sum(batch: int, feed_from_relu: bool = False) -> onnx.ModelProto:
    body = helper.make_graph(
        [
            helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
            helper.make_node("Mul", ["sum_out", "sum_out"], ["scan_out"]),
        ],
        "body",
        [helper.make_tensor_value_info(n, F, [2]) for n in ("sum_in", "next")],
        [helper.make_tensor_value_info(n, F, [2]) for n in ("sum_out", "scan_out")],
    )
    nodes = [
        helper.make_node(
            "Scan", ["", "initial", "xs"], ["y", "z"], name="scan", body=body, num_scan_inputs=1
        )
    ]
    if feed_from_relu:
        nodes.insert(0, helper.make_node("Relu", ["x"], ["xs"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("initial", F, [batch, 2]),
            helper.make_tensor_value_info("x" if feed_from_relu else "xs", F, [batch, 3, 2]),
        ],
        [
            helper.make_tensor_value_info("y", F, [batch, 2]),
            helper.make_tensor_value_info("z", F, [batch, 3, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 7
    return model


def test_batch_one_keeps_its_signature_and_matches_onnxruntime():
    model = scan_sum(1)
    rng = np.random.default_rng(0)
    feeds = {
        "initial": rng.standard_normal((1, 2)).astype(np.float32),
        "xs": rng.standard_normal((1, 3, 2)).astype(np.float32),
    }
    compiled = compile_model(model)
    assert [s.shape for s in compiled.inputs] == [(1, 2), (1, 3, 2)]
    ours = compiled.run(feeds)
    y, z = onnxruntime_run(model, feeds)
    np.testing.assert_allclose(ours["y"], y, rtol=1e-6)
    np.testing.assert_allclose(ours["z"], z, rtol=1e-6)


def test_a_larger_batch_is_refused():
    with pytest.raises(
        FrontendError, match=r"Scan node 'scan' \(opset 8\): input 'initial' has batch size 2"
    ):
        import_onnx(scan_sum(2))


def test_a_scan_fed_by_another_node_is_refused():
    with pytest.raises(FrontendError, match=r"input 'xs' is not a graph input"):
        import_onnx(scan_sum(1, feed_from_relu=True))
