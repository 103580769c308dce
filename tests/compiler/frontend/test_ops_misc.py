"""CumProd, SwiGLU, MelWeightMatrix, MaxUnpool, Col2Im, TensorScatter and Det
(compiler/frontend/ops/misc.py): compiled to machine code and checked against onnx's reference
evaluator, and the import errors for unsupported attribute values and bad inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import assert_outputs_match

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32

rng = np.random.default_rng(11)


def make(nodes, inputs, outputs, opset: int, inits=None) -> onnx.ModelProto:
    """A model: inputs [(name, elem type, shape)], outputs [(name, elem type)], initializers
    {name: array} (import-time constants)."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tol: float = 1e-5) -> None:
    ours = compile_model(model).run(feeds)
    assert_outputs_match(ours, ReferenceEvaluator(model).run(None, feeds), tol)


def import_error(model: onnx.ModelProto, match: str) -> str:
    with pytest.raises(FrontendError, match=match) as e:
        import_onnx(model)
    return str(e.value)


def randn(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def test_cumprod_attributes_float_and_int():
    nodes = [
        helper.make_node("CumProd", ["x", "a1"], ["y0"], name="c0"),
        helper.make_node("CumProd", ["x", "a0"], ["y1"], name="c1", exclusive=1, reverse=1),
        helper.make_node("CumProd", ["n", "a1"], ["y2"], name="c2", reverse=1),
        helper.make_node("CumProd", ["n", "a0"], ["y3"], name="c3", exclusive=1),
    ]
    m = make(
        nodes,
        [("x", F, [3, 4, 2]), ("n", I64, [3, 4])],
        [("y0", F), ("y1", F), ("y2", I64), ("y3", I64)],
        26,
        {"a1": np.int64(-2), "a0": np.int64(0)},
    )
    check(m, {"x": randn(3, 4, 2), "n": rng.integers(-3, 4, (3, 4)).astype(np.int64)})


def test_swiglu_alpha():
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], name="s", alpha=0.5)
    m = make([node], [("a", F, [2, 3, 5]), ("b", F, [2, 3, 5])], [("y", F)], 28)
    check(m, {"a": randn(2, 3, 5), "b": randn(2, 3, 5)})


def test_mel_weight_matrix_folds_from_constants():
    node = helper.make_node("MelWeightMatrix", ["nb", "dl", "sr", "lo", "hi"], ["y"], name="mel")
    inits = {
        "nb": np.int64(6),
        "dl": np.int64(32),
        "sr": np.int64(8000),
        "lo": np.float32(100),
        "hi": np.float32(3500),
    }
    m = make([node], [], [("y", F)], 17, inits)
    check(m, {})
    m = make(
        [node], [("nb", I64, [])], [("y", F)], 17, {k: v for k, v in inits.items() if k != "nb"}
    )
    assert "'nb'" in import_error(m, "MelWeightMatrix node 'mel': all inputs must be constants")


def test_max_unpool_after_overlapping_max_pool_with_output_shape():
    pool = helper.make_node(
        "MaxPool", ["x"], ["p", "i"], name="mp", kernel_shape=[3, 3], strides=[2, 2],
        pads=[1, 1, 1, 1],
    )  # fmt: skip
    unpool = helper.make_node(
        "MaxUnpool", ["p", "i", "os"], ["y"], name="mu", kernel_shape=[3, 3], strides=[2, 2],
        pads=[1, 1, 1, 1],
    )  # fmt: skip
    m = make(
        [pool, unpool],
        [("x", F, [2, 3, 7, 7])],
        [("y", F)],
        22,
        {"os": np.array([2, 3, 8, 9], dtype=np.int64)},
    )
    check(m, {"x": randn(2, 3, 7, 7)})


def test_max_unpool_run_time_indices_last_write_wins():
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="mu", kernel_shape=[2])
    m = make([node], [("x", F, [1, 2, 3]), ("i", I64, [1, 2, 3])], [("y", F)], 22)
    idx = np.array([[[0, 2, 0], [5, 7, 5]]], dtype=np.int64)  # duplicates in both slices
    check(m, {"x": randn(1, 2, 3), "i": idx})


def test_max_unpool_errors():
    node = helper.make_node("MaxUnpool", ["x", "i", "os"], ["y"], name="mu", kernel_shape=[2])
    m = make(
        [node],
        [("x", F, [1, 2, 3]), ("i", I64, [1, 2, 3])],
        [("y", F)],
        22,
        {"os": np.array([1, 2, 3], dtype=np.int64)},
    )
    import_error(m, "MaxUnpool node 'mu': output_shape .* at least the inferred")


def test_col2im_strides_pads_dilations_3d():
    node = helper.make_node(
        "Col2Im", ["x", "img", "blk"], ["y"], name="c", strides=[2, 1, 1],
        pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1],
    )  # fmt: skip
    img, blk = [5, 6, 3], [2, 2, 2]
    pos = [(5 + 1 + 0 - 2) // 2 + 1, (6 + 0 + 1 - 3) // 1 + 1, (3 + 1 + 1 - 2) // 1 + 1]
    shape = [2, 3 * 8, int(np.prod(pos))]
    m = make(
        [node],
        [("x", F, shape)],
        [("y", F)],
        18,
        {"img": np.array(img, dtype=np.int64), "blk": np.array(blk, dtype=np.int64)},
    )
    check(m, {"x": randn(*shape)})


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_modes(mode):
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], name="ts", mode=mode, axis=1)
    m = make(
        [node],
        [("c", F, [3, 5, 2, 2]), ("u", F, [3, 3, 2, 2]), ("w", I64, [3])],
        [("y", F)],
        24,
    )
    w = np.array(
        [0, 4 if mode == "circular" else 2, 9 if mode == "circular" else 1], dtype=np.int64
    )
    check(m, {"c": randn(3, 5, 2, 2), "u": randn(3, 3, 2, 2), "w": w})


def test_tensor_scatter_without_write_indices_and_errors():
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], name="ts")
    m = make([node], [("c", F, [2, 4, 3]), ("u", F, [2, 2, 3])], [("y", F)], 24)
    check(m, {"c": randn(2, 4, 3), "u": randn(2, 2, 3)})
    bad = helper.make_node("TensorScatter", ["c", "u"], ["y"], name="ts", mode="ring")
    m = make([bad], [("c", F, [2, 4, 3]), ("u", F, [2, 2, 3])], [("y", F)], 24)
    import_error(m, "TensorScatter node 'ts': mode 'ring' is not supported")
    m = make([node], [("c", F, [2, 4, 3]), ("u", F, [2, 5, 3])], [("y", F)], 24)
    import_error(m, "TensorScatter node 'ts': update .* may be no longer")


def test_det_batched_3x3_and_4x4():
    nodes = [
        helper.make_node("Det", ["a"], ["ya"], name="d3"),
        helper.make_node("Det", ["b"], ["yb"], name="d4"),
        helper.make_node("Det", ["c"], ["yc"], name="d1"),
    ]
    m = make(
        nodes,
        [("a", F, [2, 3, 3, 3]), ("b", F, [4, 4]), ("c", F, [2, 1, 1])],
        [("ya", F), ("yb", F), ("yc", F)],
        22,
    )
    check(m, {"a": randn(2, 3, 3, 3), "b": randn(4, 4), "c": randn(2, 1, 1)}, tol=1e-4)


def test_det_errors():
    m = make([helper.make_node("Det", ["a"], ["y"], name="d")], [("a", F, [5, 5])], [("y", F)], 22)
    import_error(m, "Det node 'd': matrices of size 5x5 are not supported")
    m = make([helper.make_node("Det", ["a"], ["y"], name="d")], [("a", F, [2, 3])], [("y", F)], 22)
    import_error(m, "Det node 'd': needs square matrices")
