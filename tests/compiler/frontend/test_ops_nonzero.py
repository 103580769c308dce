"""NonZero (compiler/frontend/ops/nonzero.py) and the data-dependent output lengths it relies on
(`Importer.bounded`, trimmed by `CompiledModel.results`): compiled, run on inputs with different
numbers of nonzeros, and compared with onnxruntime; a node reading such a value is refused."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, I32, I64, B = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL


def nonzero_model(elem: int, shape: list[int], extra_output: bool = False):
    nodes = [helper.make_node("NonZero", ["x"], ["y"])]
    outputs = [("y", I64)]
    if extra_output:  # a static output beside the data-dependent one
        nodes.append(helper.make_node("Neg", ["x"], ["z"]))
        outputs.append(("z", elem))
    return graph_model(nodes, [("x", elem, shape)], outputs, opset=13)


@pytest.mark.parametrize(
    "dtype, elem",
    [(np.float32, F), (np.int64, I64), (np.int32, I32)],
)
def test_nonzero_matches_onnxruntime_for_any_count(dtype, elem):
    """One compiled model, run on inputs with no, some and only nonzero elements: each result
    has its own length."""
    model = nonzero_model(elem, [3, 4, 2], extra_output=True)
    compiled = compile_model(model)
    assert compiled.output_names == ["y", "z"]
    rng = np.random.default_rng(3)
    for density in (0.0, 0.3, 1.0):
        x = ((rng.random((3, 4, 2)) < density) * rng.integers(1, 9, (3, 4, 2))).astype(dtype)
        ours = compiled.run({"x": x})
        ref_y, ref_z = onnxruntime_run(model, {"x": x})
        assert ours["y"].shape == ref_y.shape == (3, int(np.count_nonzero(x)))
        np.testing.assert_array_equal(ours["y"], ref_y)
        np.testing.assert_array_equal(ours["z"], ref_z)


def test_nonzero_of_bool_and_nan():
    model = nonzero_model(B, [6])
    x = np.array([True, False, False, True, True, False])
    np.testing.assert_array_equal(compile_model(model).run({"x": x})["y"], [[0, 3, 4]])
    model = nonzero_model(F, [4])
    x = np.array([0.0, np.nan, -0.0, 2.0], dtype=np.float32)  # NaN is nonzero, -0.0 is zero
    np.testing.assert_array_equal(compile_model(model).run({"x": x})["y"], [[1, 3]])


def test_reading_a_data_dependent_value_is_refused():
    model = graph_model(
        [
            helper.make_node("NonZero", ["x"], ["nz"], name="where"),
            helper.make_node("Transpose", ["nz"], ["y"], name="flip"),
        ],
        [("x", F, [2, 3])],
        [("y", I64)],
        opset=13,
    )
    with pytest.raises(FrontendError, match=r"Transpose node 'flip'.*'nz' has a data-dependent"):
        import_onnx(model)


def test_too_large_nonzero_is_refused():
    model = nonzero_model(F, [128, 128])
    with pytest.raises(FrontendError, match=r"NonZero over 16384 elements.*over the limit"):
        import_onnx(model)
