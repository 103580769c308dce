"""compiler/frontend/shape_binding.py: Reshape and Expand targets that exporters compute from
the input's own sizes become constants (0 copies a dim, -1 is the one left, 1 keeps the input's
dim), and the shape arithmetic that only fed them is dropped."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.frontend.run_time_dims import RUN_TIME
from compiler.frontend.shape_binding import bind
from tests.compiler.test_run_time_dims import repeat_kv, split_heads


def _names(graph: onnx.GraphProto, indices: set[int]) -> list[str]:
    return sorted(graph.node[i].op_type for i in indices)


def test_reshape_targets_copy_the_symbolic_dims() -> None:
    graph = split_heads().graph
    bound = bind(graph)
    reshapes = [i for i, n in enumerate(graph.node) if n.op_type == "Reshape"]
    assert sorted(bound.inputs) == reshapes
    split, merge = (bound.inputs[i][1] for i in reshapes)
    np.testing.assert_array_equal(split, [0, 0, 4, 6])  # [batch, seq, 4, 6]
    np.testing.assert_array_equal(merge, [0, 0, 24])
    # Shape, both Gathers, both Unsqueezes and both Concats fed the targets only
    assert _names(graph, bound.dead) == sorted(
        ["Shape", "Gather", "Gather", "Unsqueeze", "Unsqueeze", "Concat", "Concat"]
    )


def test_a_symbol_moved_to_another_place_is_the_one_inferred_dim() -> None:
    """repeat_kv: Expand keeps x's dims (1), the Reshape's seq moves from axis 3 to 2 (-1)."""
    graph = repeat_kv().graph
    bound = bind(graph)
    by_type = {graph.node[i].op_type: v[1] for i, v in bound.inputs.items()}
    np.testing.assert_array_equal(by_type["Expand"], [1, 2, 3, 1, 8])
    np.testing.assert_array_equal(by_type["Reshape"], [0, 6, -1, 8])
    assert "Shape" in _names(graph, bound.dead)


def test_two_symbols_merged_are_bound_but_refused_at_import_by_name() -> None:
    """[batch * seq, 8] is spelled [-1, 8]; its one run-time dim would be made of two, which
    has no size to give yet: the importer refuses the Reshape by name (the model is then
    compiled per size)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["q"], axis=0),
        helper.make_node("Mul", ["b", "q"], ["n"]),
        helper.make_node("Unsqueeze", ["n", "zero"], ["rows"]),
        helper.make_node("Concat", ["rows", "eight"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="merge"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "i0"),
        numpy_helper.from_array(np.array(1, np.int64), "i1"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([8], np.int64), "eight"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    bound = bind(graph)
    np.testing.assert_array_equal(bound.inputs[6][1], [-1, 8])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        FrontendError,
        match=r"Reshape node 'merge': cannot reshape \['\?', '\?', 8\] into \[-1, 8\]: each "
        r"run-time dim must be copied \(0\) or be the one -1",
    ):
        import_onnx(model, {"x": [RUN_TIME, RUN_TIME, 8]})
