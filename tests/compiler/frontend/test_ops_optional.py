"""Optional, OptionalHasElement and OptionalGetElement on tensors
(compiler/frontend/ops/optional.py): an optional is the tensor it holds, known at import time."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, B = TensorProto.FLOAT, TensorProto.BOOL


def test_an_optional_of_a_computed_tensor_holds_it():
    model = graph_model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Optional", ["r"], ["opt"]),
            helper.make_node("OptionalHasElement", ["opt"], ["has"]),
            helper.make_node("OptionalGetElement", ["opt"], ["got"]),
            helper.make_node("OptionalHasElement", [""], ["none"]),
        ],
        [("x", F, [2, 3])],
        [("has", B), ("got", F), ("none", B)],
        opset=18,
    )
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    ours = compile_model(model).run({"x": x})
    has, got, none = onnxruntime_run(model, {"x": x})
    assert ours["has"] == has == np.array(True) and ours["none"] == none == np.array(False)
    np.testing.assert_array_equal(ours["got"], got)


def test_an_empty_optional_is_refused():
    model = graph_model(
        [
            helper.make_node(
                "Optional", [], ["opt"], name="nothing", type=helper.make_tensor_type_proto(F, [2])
            ),
            helper.make_node("OptionalHasElement", ["opt"], ["has"]),
        ],
        [],
        [("has", B)],
        opset=18,
    )
    with pytest.raises(FrontendError, match=r"Optional node 'nothing': an empty optional"):
        import_onnx(model)
