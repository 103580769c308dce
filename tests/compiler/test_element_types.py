"""Models with int64, int32 and bool tensors (token ids, attention masks, comparisons, Where,
Cast) compile through every level and match onnxruntime exactly; integer kernels vectorize like
float32 ones, bool kernels stay scalar; constant subgraphs of exported models fold before the
operator check."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import InputError
from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model, lower
from compiler.pass_runner import make_context
from tests.support.references import onnxruntime_run as reference

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def make(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    return m


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5) -> None:
    ours = compile_model(model).run(feeds)
    for (name, o), r in zip(ours.items(), reference(model, feeds), strict=True):
        assert o.dtype == r.dtype, name
        assert o.shape == r.shape, name
        if np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(o, r, rtol=rtol, atol=rtol * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(o, r)


rng = np.random.default_rng(0)


def test_embedding_lookup_with_an_attention_mask():
    """BERT's input layer: token ids gather embedding rows; the int64 mask becomes an additive
    bias through Cast, Sub and Mul; a bool padding flag comes out too."""
    vocab, seq, dim = 50, 8, 16
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["x"]),
        helper.make_node("Cast", ["mask"], ["mf"], to=F),
        helper.make_node("Sub", ["one", "mf"], ["inv"]),
        helper.make_node("Mul", ["inv", "big"], ["bias"]),
        helper.make_node("Unsqueeze", ["bias", "axis2"], ["bias3"]),
        helper.make_node("Add", ["x", "bias3"], ["y"]),
        helper.make_node("Equal", ["mask", "zero"], ["pad"]),
    ]
    model = make(
        nodes,
        [("ids", I64, [1, seq]), ("mask", I64, [1, seq])],
        [("y", F, [1, seq, dim]), ("pad", B, [1, seq])],
        [
            ("emb", rng.standard_normal((vocab, dim)).astype(np.float32)),
            ("one", np.float32(1.0)),
            ("big", np.float32(-1e4)),
            ("axis2", np.int64([2])),
            ("zero", np.int64(0)),
        ],
    )
    ids = rng.integers(0, vocab, (1, seq)).astype(np.int64)
    mask = np.int64([[1, 1, 1, 1, 1, 0, 0, 0]])
    check(model, {"ids": ids, "mask": mask})


@pytest.mark.parametrize("elem, dtype", [(I64, np.int64), (I32, np.int32)])
def test_integer_arithmetic(elem, dtype):
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Mul", ["s", "a"], ["p"]),
        helper.make_node("Div", ["p", "b"], ["q"]),  # truncates toward zero
        helper.make_node("Max", ["q", "a"], ["mx"]),
        helper.make_node("Min", ["mx", "b"], ["mn"]),
        helper.make_node("Neg", ["mn"], ["ng"]),
        helper.make_node("Abs", ["ng"], ["ab"]),
        helper.make_node("ReduceSum", ["ab", "axes"], ["r"], keepdims=0),
    ]
    shape = [4, 37]
    model = make(
        nodes,
        [("a", elem, shape), ("b", elem, shape)],
        [("ab", elem, shape), ("r", elem, [4])],
        [("axes", np.int64([1]))],
    )
    a = rng.integers(-100, 100, shape).astype(dtype)
    b = rng.integers(1, 9, shape).astype(dtype) * rng.choice([-1, 1], shape).astype(dtype)
    check(model, {"a": a, "b": b})


def test_comparisons_logic_where_and_casts():
    nodes = [
        helper.make_node("Less", ["x", "y"], ["lt"]),
        helper.make_node("GreaterOrEqual", ["x", "zero"], ["ge"]),
        helper.make_node("And", ["lt", "ge"], ["both"]),
        helper.make_node("Or", ["lt", "ge"], ["either"]),
        helper.make_node("Xor", ["both", "either"], ["one"]),
        helper.make_node("Not", ["one"], ["none"]),
        helper.make_node("Where", ["both", "x", "y"], ["w"]),
        helper.make_node("Cast", ["w"], ["wi"], to=I32),  # float -> int truncates
        helper.make_node("Cast", ["wi"], ["wb"], to=B),
        helper.make_node("Cast", ["either"], ["ei"], to=I64),
        helper.make_node("Expand", ["ei", "shape"], ["big"]),
    ]
    model = make(
        nodes,
        [("x", F, [3, 17]), ("y", F, [17])],
        [("none", B, [3, 17]), ("w", F, [3, 17]), ("wb", B, [3, 17]), ("big", I64, [2, 3, 17])],
        [("zero", np.float32(0.0)), ("shape", np.int64([2, 1, 1]))],
    )
    x = (rng.standard_normal((3, 17)) * 3).astype(np.float32)
    y = (rng.standard_normal(17) * 3).astype(np.float32)
    check(model, {"x": x, "y": y})


def test_inputs_of_the_wrong_dtype_are_refused_with_the_expected_one():
    model = make([helper.make_node("Neg", ["a"], ["b"])], [("a", I64, [3])], [("b", I64, [3])])
    compiled = compile_model(model)
    assert compiled.inputs[0].dtype == np.int64 and compiled.outputs[0].dtype == np.int64
    with pytest.raises(Exception, match="has dtype float32; the model expects int64"):
        compiled.run({"a": np.zeros(3, np.float32)})


def _loops_ir(model: onnx.ModelProto) -> str:
    module = import_onnx(model)
    lower(module, "loops", make_context(), {})
    return str(module)


def test_integer_kernels_vectorize_and_bool_kernels_stay_scalar():
    n = 256
    ints = make([helper.make_node("Add", ["a", "a"], ["b"])], [("a", I64, [n])], [("b", I64, [n])])
    assert "vector<" in _loops_ir(ints) and "xi64>" in _loops_ir(ints)
    bools = make([helper.make_node("Not", ["a"], ["b"])], [("a", B, [n])], [("b", B, [n])])
    text = _loops_ir(bools)
    assert "vector<" not in text, "an i1 vector is bit-packed: bool kernels must stay scalar"
    check(bools, {"a": rng.random(n) < 0.5})


def test_gather_with_computed_indices_refuses_out_of_range_ones():
    """An index out of range is refused when the model runs, as onnxruntime refuses it (the
    kernel clamps it: reading past the table would be a hole a hostile input could use, but
    the clamped row is not the model's result); negative ones count from the end."""
    model = make(
        [helper.make_node("Gather", ["table", "ids"], ["y"])],
        [("ids", I64, [4])],
        [("y", F, [4])],
        [("table", np.float32([10, 20, 30]))],
    )
    compiled = compile_model(model)
    out = compiled.run({"ids": np.int64([0, -1, 2, -3])})["y"]
    np.testing.assert_array_equal(out, np.float32([10, 30, 30, 10]))
    with pytest.raises(InputError, match=r"'ids' into axis 0 of 'table' is 7, outside \[-3, 3\)$"):
        compiled.run({"ids": np.int64([0, -1, 7, -9])})


def test_shape_subgraph_and_unsupported_constant_ops_fold_before_the_operator_check():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (as exporters write it) folds, and so
    do operators ziggurat has no converter for when their inputs are constants (Range, Tile)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["b1"]),
        helper.make_node("Range", ["r0", "r1", "r2"], ["rng"]),
        helper.make_node("Tile", ["rng", "reps"], ["tiled"]),
        helper.make_node("ReduceSum", ["tiled", "ax0"], ["cols"]),
        helper.make_node("Concat", ["b1", "cols"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    model = make(
        nodes,
        [("x", F, [2, 3, 4])],
        [("y", F, [2, 12])],
        [
            ("i0", np.int64(0)),
            ("ax0", np.int64([0])),
            ("r0", np.int64(1)),
            ("r1", np.int64(4)),
            ("r2", np.int64(1)),
            ("reps", np.int64([2])),
        ],
    )
    check(model, {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)})


def test_an_unsupported_operator_on_computed_values_names_node_operator_and_opset():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Bernoulli", ["r"], ["h"], name="coin"),
        helper.make_node("Relu", ["h"], ["y"]),  # fed by it: not reported again
        helper.make_node("Range", ["a", "b", "c"], ["ok"]),  # constants: folds
    ]
    model = make(
        nodes,
        [("x", F, [2, 3])],
        [("y", F, ["n", "m"]), ("ok", I64, [2])],
        [("a", np.int64(0)), ("b", np.int64(2)), ("c", np.int64(1))],
    )
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    assert str(e.value) == "unsupported ONNX operators (opset 17): Bernoulli (node 'coin')"


def test_a_bool_masked_where_after_a_matmul_is_not_fused_into_its_vector_tile():
    """An attention-mask pattern: the Where reads a bool buffer, so it cannot run on the matmul's
    vector registers (LLVM's i1 vectors are bits, a bool buffer holds bytes); it used to be
    fused anyway and the select got a vector condition."""
    w = rng.standard_normal((16, 32)).astype(np.float32)
    m = make(
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"]),
            helper.make_node("Where", ["mask", "mm", "neg"], ["y"]),
        ],
        [("x", F, [8, 16]), ("mask", B, [8, 32])],
        [("y", F, [8, 32])],
        [("w", w), ("neg", np.float32(-1e9))],
    )
    check(
        m, {"x": rng.standard_normal((8, 16)).astype(np.float32), "mask": rng.random((8, 32)) < 0.5}
    )
