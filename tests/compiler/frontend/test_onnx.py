"""ONNX import (compiler/frontend/onnx.py): one tiny model per operator (op names, attributes,
result shapes) and every error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import CONVERTERS, import_onnx
from dialects import graph as g

F = TensorProto.FLOAT


def model(nodes, inputs, outputs=("y",), inits=None, opset=17, in_type=F) -> onnx.ModelProto:
    """A model from nodes, {input: shape}, output names and {initializer: array}."""
    ins = [helper.make_tensor_value_info(n, in_type, s) for n, s in inputs.items()]
    outs = [helper.make_tensor_value_info(n, F, None) for n in outputs]
    init = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "test", ins, outs, init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def node(op, ins, outs=("y",), **attrs) -> onnx.NodeProto:
    return helper.make_node(op, list(ins), list(outs), name=f"{op.lower()}_0", **attrs)


def graph_ops(m: ModuleOp) -> list[g.GraphOp]:
    return [op for op in m.walk() if op.name.startswith("graph.")]


def names(m: ModuleOp) -> list[str]:
    return [op.name for op in graph_ops(m) if op.name != "graph.constant"]


def out_shapes(m: ModuleOp) -> list[tuple[int, ...]]:
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    return [tuple(t.get_shape()) for t in fn.function_type.outputs.data]


def the(m: ModuleOp, cls):
    (op,) = [o for o in m.walk() if isinstance(o, cls)]
    return op


def ints(a) -> tuple[int, ...]:
    return tuple(a.get_values())


def roundtrip(m: ModuleOp) -> None:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, g.Graph):
        ctx.load_dialect(d)
    text = str(m)
    again = Parser(ctx, text).parse_module()
    again.verify()
    assert str(again) == text


def imp(nodes, inputs, **kw) -> ModuleOp:
    m = import_onnx(model(nodes, inputs, **kw))
    roundtrip(m)
    return m


W = np.ones((4, 3, 3, 3), np.float32)


# ----------------------------------------------------------------------------- structure


def test_function_signature_and_names():
    m = imp([node("Relu", ["input"], ["output"])], {"input": [1, 3]}, outputs=("output",))
    text = str(m)
    assert 'func.func @main(%input: tensor<1x3xf32> {ziggurat.name = "input"})' in text
    assert '-> (tensor<1x3xf32> {ziggurat.name = "output"})' in text


def test_initializers_become_constants():
    m = imp([node("Conv", ["x", "w"])], {"x": [1, 3, 5, 5]}, inits={"w": W})
    c = the(m, g.ConstantOp)
    np.testing.assert_array_equal(g.constant_value(c), W)


# ----------------------------------------------------------------------------- conv


@pytest.mark.parametrize(
    "size, attrs, pads, shape",
    [
        (5, {}, (0, 0, 0, 0), (1, 4, 3, 3)),
        (5, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, (1, 1, 1, 1), (1, 4, 3, 3)),
        (6, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (0, 0, 1, 1), (1, 4, 3, 3)),
        (6, {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 1, 0, 0), (1, 4, 3, 3)),
        (5, {"auto_pad": "SAME_UPPER"}, (1, 1, 1, 1), (1, 4, 5, 5)),
        (5, {"auto_pad": "VALID", "dilations": [2, 2]}, (0, 0, 0, 0), (1, 4, 1, 1)),
    ],
)
def test_conv(size, attrs, pads, shape):
    m = imp(
        [node("Conv", ["x", "w", "b"], **attrs)],
        {"x": [1, 3, size, size]},
        inits={"w": W, "b": np.zeros(4, np.float32)},
    )
    conv = the(m, g.ConvOp)
    assert ints(conv.pads) == pads
    assert conv.bias is not None
    assert out_shapes(m) == [shape]


def test_depthwise_conv():
    m = imp(
        [node("Conv", ["x", "w"], group=3, pads=[1, 1, 1, 1])],
        {"x": [1, 3, 5, 5]},
        inits={"w": np.ones((3, 1, 3, 3), np.float32)},
    )
    assert the(m, g.ConvOp).group.value.data == 3
    assert out_shapes(m) == [(1, 3, 5, 5)]


# ----------------------------------------------------------------------------- linear algebra


def test_gemm():
    m = imp(
        [node("Gemm", ["a", "b", "c"], alpha=0.5, transB=1)],
        {"a": [2, 3]},
        inits={"b": np.ones((4, 3), np.float32), "c": np.ones(4, np.float32)},
    )
    op = the(m, g.GemmOp)
    assert op.trans_b.value.data == 1 and op.alpha.value.data == 0.5
    assert out_shapes(m) == [(2, 4)]


@pytest.mark.parametrize(
    "a, b, out",
    [
        ([2, 3], [3, 4], (2, 4)),
        ([3], [2, 3, 5], (2, 5)),
        ([7, 1, 2, 3], [4, 3, 6], (7, 4, 2, 6)),
        ([3], [3], ()),
    ],
)
def test_matmul(a, b, out):
    m = imp([node("MatMul", ["a", "b"])], {"a": a, "b": b})
    assert names(m) == ["graph.matmul"]
    assert out_shapes(m) == [out]


# ----------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow"])
def test_binary_broadcast(op):
    m = imp([node(op, ["a", "b"])], {"a": [2, 1, 3], "b": [4, 1]})
    assert names(m) == [f"graph.{op.lower()}"]
    assert out_shapes(m) == [(2, 4, 3)]


def test_binary_with_int_constant_is_f32():
    m = imp([node("Pow", ["a", "e"])], {"a": [3]}, inits={"e": np.array(2, np.int64)})
    assert g.constant_value(the(m, g.ConstantOp)).dtype == np.float32


@pytest.mark.parametrize(
    "op, name, opset",
    [
        ("Sqrt", "sqrt", 17),
        ("Exp", "exp", 17),
        ("Log", "log", 17),
        ("Neg", "neg", 17),
        ("Abs", "abs", 17),
        ("Reciprocal", "reciprocal", 17),
        ("Relu", "relu", 17),
        ("Sigmoid", "sigmoid", 17),
        ("Tanh", "tanh", 17),
        ("Erf", "erf", 17),
        ("HardSwish", "hard_swish", 14),
        ("Identity", "identity", 17),
        ("Dropout", "dropout", 17),
        ("LeakyRelu", "leaky_relu", 17),
        ("HardSigmoid", "hard_sigmoid", 17),
        ("Gelu", "gelu", 20),
    ],
)
def test_unary(op, name, opset):
    m = imp([node(op, ["x"])], {"x": [2, 3]}, opset=opset)
    assert names(m) == [f"graph.{name}"]
    assert out_shapes(m) == [(2, 3)]


def test_unary_attributes():
    m = imp(
        [
            node("LeakyRelu", ["x"], ["a"], alpha=0.3),
            node("HardSigmoid", ["a"], ["b"], beta=0.4),
            node("Gelu", ["b"], approximate="tanh"),
        ],
        {"x": [2]},
        opset=20,
    )
    assert the(m, g.LeakyReluOp).alpha.value.data == pytest.approx(0.3)
    assert the(m, g.HardSigmoidOp).beta.value.data == pytest.approx(0.4)
    assert the(m, g.GeluOp).approximate.data == "tanh"


def test_clip():
    m = imp(
        [node("Clip", ["x", "lo", "hi"])],
        {"x": [3]},
        inits={"lo": np.float32(0), "hi": np.float32(6)},
        opset=11,
    )
    clip = the(m, g.ClipOp)
    assert (clip.min.value.data, clip.max.value.data) == (0.0, 6.0)
    m = imp([node("Clip", ["x", "lo"])], {"x": [3]}, inits={"lo": np.float32(-1)})
    assert the(m, g.ClipOp).max.value.data == float("inf")
    assert not [o for o in m.walk() if isinstance(o, g.ConstantOp)]


def test_cast():
    m = imp([node("Cast", ["x"], to=F)], {"x": [3]})
    assert names(m) == ["graph.cast"]
    # a cast of a constant is folded away
    m = imp(
        [node("Cast", ["k"], ["kf"], to=F), node("Add", ["x", "kf"])],
        {"x": [3]},
        inits={"k": np.array([1, 2, 3], np.int64)},
    )
    assert names(m) == ["graph.add"]
    np.testing.assert_array_equal(g.constant_value(the(m, g.ConstantOp)), [1, 2, 3])


# ----------------------------------------------------------------------------- normalization


@pytest.mark.parametrize("op, cls", [("Softmax", g.SoftmaxOp), ("LogSoftmax", g.LogSoftmaxOp)])
def test_softmax_opset13(op, cls):
    m = imp([node(op, ["x"])], {"x": [2, 3, 4]}, opset=13)
    assert the(m, cls).axis.value.data == 2


def test_softmax_opset11_coerces_to_2d():
    m = imp([node("Softmax", ["x"], axis=1)], {"x": [2, 3, 4]}, opset=11)
    assert names(m) == ["graph.reshape", "graph.softmax", "graph.reshape"]
    ops = graph_ops(m)
    assert tuple(ops[0].results[0].type.get_shape()) == (2, 12)
    assert ops[1].axis.value.data == 1
    assert out_shapes(m) == [(2, 3, 4)]
    m = imp([node("LogSoftmax", ["x"], axis=-1)], {"x": [2, 3, 4]}, opset=11)
    assert names(m) == ["graph.log_softmax"]


def test_layer_norm():
    m = imp(
        [node("LayerNormalization", ["x", "s", "b"], axis=-1, epsilon=1e-3)],
        {"x": [2, 3, 4]},
        inits={"s": np.ones(4, np.float32), "b": np.zeros(4, np.float32)},
    )
    op = the(m, g.LayerNormOp)
    assert op.axis.value.data == 2 and op.bias is not None
    assert op.epsilon.value.data == pytest.approx(1e-3)


def test_layer_norm_mean_and_inv_std_dev_outputs():
    # the optional outputs are built from graph ops; reduced dims are kept as 1
    m = imp(
        [node("LayerNormalization", ["x", "s"], ["y", "mean", "isd"], axis=1)],
        {"x": [2, 3, 4]},
        outputs=("y", "mean", "isd"),
        inits={"s": np.ones((3, 4), np.float32)},
    )
    assert out_shapes(m) == [(2, 3, 4), (2, 1, 1), (2, 1, 1)]
    assert names(m) == [
        "graph.layer_norm",
        "graph.reduce_mean",
        "graph.sub",
        "graph.mul",
        "graph.reduce_mean",
        "graph.add",
        "graph.sqrt",
        "graph.reciprocal",
    ]


def test_batch_norm():
    p = np.ones(3, np.float32)
    m = imp(
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)],
        {"x": [1, 3, 4, 4]},
        inits={"s": p, "b": p, "m": p, "v": p},
    )
    assert names(m) == ["graph.batch_norm"]
    assert out_shapes(m) == [(1, 3, 4, 4)]


# ----------------------------------------------------------------------------- pooling


def test_max_pool():
    m = imp(
        [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
        {"x": [1, 2, 6, 6]},
    )
    assert the(m, g.MaxPoolOp).ceil_mode.value.data == 1
    assert out_shapes(m) == [(1, 2, 3, 3)]
    m = imp(
        [node("MaxPool", ["x"], kernel_shape=[2, 2], auto_pad="SAME_UPPER")], {"x": [1, 2, 5, 5]}
    )
    assert ints(the(m, g.MaxPoolOp).pads) == (0, 0, 1, 1)


def test_avg_pool():
    m = imp(
        [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
        {"x": [1, 2, 5, 5]},
    )
    assert the(m, g.AvgPoolOp).count_include_pad.value.data == 1
    assert out_shapes(m) == [(1, 2, 5, 5)]


@pytest.mark.parametrize(
    "op, name", [("GlobalAveragePool", "global_avg_pool"), ("GlobalMaxPool", "global_max_pool")]
)
def test_global_pool(op, name):
    m = imp([node(op, ["x"])], {"x": [1, 2, 5, 5]})
    assert names(m) == [f"graph.{name}"] and out_shapes(m) == [(1, 2, 1, 1)]


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax"])
@pytest.mark.parametrize("opset", [11, 13, 18])
def test_reduce(op, opset):
    axes_as_input = opset >= 18 or (op == "ReduceSum" and opset >= 13)
    if axes_as_input:
        n = node(op, ["x", "axes"], keepdims=0)
        inits = {"axes": np.array([-1, 1], np.int64)}
    else:
        n, inits = node(op, ["x"], axes=[-1, 1], keepdims=0), {}
    m = imp([n], {"x": [2, 3, 4]}, inits=inits, opset=opset)
    red = graph_ops(m)[-1]
    assert red.name == f"graph.{op[6:].lower()}".replace("graph.", "graph.reduce_")
    assert ints(red.axes) == (1, 2)
    assert out_shapes(m) == [(2,)]


def test_reduce_all_axes_keepdims():
    m = imp([node("ReduceMean", ["x"])], {"x": [2, 3]}, opset=18)
    assert ints(the(m, g.ReduceMeanOp).axes) == () and out_shapes(m) == [(1, 1)]


# ----------------------------------------------------------------------------- data movement


def test_reshape_zero_and_minus_one():
    m = imp([node("Reshape", ["x", "s"])], {"x": [2, 3, 4]}, inits={"s": np.array([0, -1])})
    assert names(m) == ["graph.reshape"] and out_shapes(m) == [(2, 12)]


def test_reshape_from_shape_chain():
    # Shape -> Gather -> Unsqueeze -> Concat computes the target at import time
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "i0"], ["n"], axis=0),
        node("Unsqueeze", ["n", "ax"], ["n1"]),
        node("Concat", ["n1", "m1"], ["t"], axis=0),
        node("Reshape", ["x", "t"]),
    ]
    m = imp(
        nodes,
        {"x": [2, 3, 4]},
        inits={"i0": np.array(0), "ax": np.array([0]), "m1": np.array([-1])},
    )
    assert names(m) == ["graph.reshape"] and out_shapes(m) == [(2, 12)]


def test_flatten_transpose_concat():
    m = imp(
        [
            node("Flatten", ["x"], ["f"], axis=-1),
            node("Transpose", ["f"], ["t"]),
            node("Concat", ["t", "t"], axis=-1),
        ],
        {"x": [2, 3, 4]},
    )
    assert names(m) == ["graph.flatten", "graph.transpose", "graph.concat"]
    assert out_shapes(m) == [(4, 12)]
    assert the(m, g.ConcatOp).axis.value.data == 1


@pytest.mark.parametrize("opset, how", [(11, "attr"), (13, "input"), (18, "num_outputs")])
def test_split(opset, how):
    if how == "attr":
        n = node("Split", ["x"], ["a", "b"], axis=1, split=[2, 3])
        inits = {}
    elif how == "input":
        n, inits = node("Split", ["x", "s"], ["a", "b"], axis=1), {"s": np.array([2, 3])}
    else:
        n, inits = node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2), {}
    m = imp([n], {"x": [1, 5]}, outputs=("a", "b"), inits=inits, opset=opset)
    sizes = ints(the(m, g.SplitOp).sizes)
    assert sizes == (2, 3) if how != "num_outputs" else sizes == (3, 2)
    assert len(out_shapes(m)) == 2


def test_split_equal_default():
    m = imp([node("Split", ["x"], ["a", "b"], axis=-1)], {"x": [2, 6]}, outputs=("a", "b"))
    assert out_shapes(m) == [(2, 3), (2, 3)]


def test_slice():
    inits = {
        "st": np.array([-1, 1]),
        "en": np.array([-(2**63), 100]),
        "ax": np.array([1, 0]),
        "sp": np.array([-2, 1]),
    }
    m = imp([node("Slice", ["x", "st", "en", "ax", "sp"])], {"x": [4, 5]}, inits=inits)
    op = the(m, g.SliceOp)
    assert (ints(op.starts), ints(op.ends), ints(op.steps)) == ((1, 4), (4, -1), (1, -2))
    assert out_shapes(m) == [(3, 3)]


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    if opset >= 13:
        nodes = [node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u", "a"])]
        inits = {"a": np.array([0, -1])}
    else:
        nodes = [
            node("Unsqueeze", ["x"], ["u"], axes=[0, -1]),
            node("Squeeze", ["u"], axes=[0, -1]),
        ]
        inits = {}
    m = imp(nodes, {"x": [2, 3]}, inits=inits, opset=opset)
    assert ints(the(m, g.UnsqueezeOp).axes) == (0, 3)
    assert out_shapes(m) == [(2, 3)]
    m = imp([node("Squeeze", ["x"])], {"x": [1, 3, 1]}, opset=opset)
    assert out_shapes(m) == [(3,)]


def test_gather():
    m = imp(
        [node("Gather", ["x", "i"], axis=1)], {"x": [2, 5]}, inits={"i": np.array([[0, -1, 2]])}
    )
    op = the(m, g.GatherOp)
    assert str(op.indices.type) == "tensor<1x3xi64>"
    assert out_shapes(m) == [(2, 1, 3)]


def test_gather_embedding_table():
    m = imp(
        [node("Gather", ["emb", "i"])],
        {"x": [1]},
        inits={"emb": np.ones((10, 4), np.float32), "i": np.array([3, 1])},
        outputs=("y",),
    )
    # all inputs are constants: the lookup is folded
    assert names(m) == []
    assert out_shapes(m) == [(2, 4)]


def test_pad():
    m = imp(
        [node("Pad", ["x", "p", "v"])],
        {"x": [2, 3]},
        inits={"p": np.array([1, 0, 1, -1]), "v": np.float32(2.0)},
    )
    op = the(m, g.PadOp)
    assert ints(op.pads) == (1, 0, 1, -1) and op.value.value.data == 2.0
    assert out_shapes(m) == [(4, 2)]
    m = imp(
        [node("Pad", ["x", "p", "", "a"])],
        {"x": [2, 3]},
        inits={"p": np.array([1, 2]), "a": np.array([-1])},
        opset=18,
    )
    assert ints(the(m, g.PadOp).pads) == (0, 1, 0, 2)


def test_constant_constant_of_shape_shape():
    k = helper.make_tensor("k", F, [3], [1.0, 2.0, 3.0])
    nodes = [
        node("Constant", [], ["c"], value=k),
        node("Shape", ["x"], ["s"]),
        node("ConstantOfShape", ["s"], ["z"], value=helper.make_tensor("v", F, [1], [0.5])),
        node("Add", ["z", "c"], ["a"]),
        node("Add", ["x", "a"]),
    ]
    m = imp(nodes, {"x": [2, 3]})
    assert names(m) == ["graph.add"]
    np.testing.assert_array_equal(
        g.constant_value(the(m, g.ConstantOp)), np.array([[1.5, 2.5, 3.5]] * 2, np.float32)
    )


def test_symbolic_dims_bound_by_input_shapes():
    mp = model([node("Relu", ["x"])], {"x": ["batch", 3]})
    m = import_onnx(mp, {"x": [8, 3]})
    assert out_shapes(m) == [(8, 3)]


def test_load_from_file(tmp_path: Path):
    p = tmp_path / "m.onnx"
    onnx.save(model([node("Relu", ["x"])], {"x": [2]}), str(p))
    assert names(import_onnx(p)) == ["graph.relu"]
    assert names(import_onnx(str(p))) == ["graph.relu"]


def test_every_spec_operator_has_a_converter():
    expected = """Conv Gemm MatMul Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Reciprocal Relu LeakyRelu
    Sigmoid Tanh Erf Gelu HardSigmoid HardSwish Clip Softmax LogSoftmax LayerNormalization
    BatchNormalization MaxPool AveragePool GlobalAveragePool GlobalMaxPool Reshape Flatten
    Transpose Concat Split Slice Squeeze Unsqueeze Gather Pad ReduceMean ReduceSum ReduceMax
    Constant ConstantOfShape Shape Identity Dropout Cast""".split()
    assert set(expected) <= set(CONVERTERS)


# ----------------------------------------------------------------------------- errors


def test_missing_file(tmp_path: Path):
    p = tmp_path / "nope.onnx"
    with pytest.raises(FrontendError, match=f"^model file not found: {p}$"):
        import_onnx(p)


def test_not_onnx_and_truncated(tmp_path: Path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xfe this is not a protobuf \x00\x01")
    with pytest.raises(FrontendError, match=f"^{bad} is not a valid ONNX model: "):
        import_onnx(bad)
    text = tmp_path / "text.onnx"
    text.write_text("hello")
    with pytest.raises(FrontendError, match="is not a valid ONNX model: "):
        import_onnx(text)
    good = model([node("Conv", ["x", "w"])], {"x": [1, 3, 5, 5]}, inits={"w": W})
    data = good.SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match=f"^{cut} is not a valid ONNX model: "):
        import_onnx(cut)


def test_unsupported_operators_listed_together():
    nodes = [
        helper.make_node("Bernoulli", ["x"], ["u"], name="coin_0"),
        helper.make_node("Multinomial", ["x"], ["n"], name="draw_1"),
        helper.make_node("Bernoulli", ["x"], ["u2"], name="coin_3"),
        node("Relu", ["x"]),
    ]
    with pytest.raises(FrontendError) as e:
        import_onnx(model(nodes, {"x": [4]}))
    assert str(e.value) == (
        "unsupported ONNX operators (opset 17): Bernoulli (nodes 'coin_0', 'coin_3'), "
        "Multinomial (node 'draw_1')"
    )


def test_unknown_input_shape_name():
    with pytest.raises(FrontendError, match="input_shapes names unknown input 'z'"):
        import_onnx(model([node("Relu", ["x"])], {"x": [2]}), {"z": [1]})


def test_unknown_dim():
    with pytest.raises(
        FrontendError,
        match=r"input 'x' has unknown dimension 0 \('batch'\) \(shape \[batch,.*pass its shape",
    ):
        import_onnx(model([node("Relu", ["x"])], {"x": ["batch", 3]}))


def test_non_float_input():
    with pytest.raises(
        FrontendError,
        match="model input 'x' has element type DOUBLE; supported: FLOAT, INT64, INT32 and BOOL",
    ):
        import_onnx(model([node("Relu", ["x"])], {"x": [2]}, in_type=TensorProto.DOUBLE))


def test_zero_size_tensors_are_import_time_constants():
    """A zero-size tensor has no values to compute: a zero-size input or result is an import-time
    constant, so what consumes it folds (a reduction over it gives its identity) and a zero-size
    model output is an empty array; no kernel sees a zero-size buffer."""
    from compiler.model import compile_model

    m = model(
        [
            node("ReduceSum", ["x", "ax"], ["r"], keepdims=1),
            node("Slice", ["w", "st", "en"], ["e"]),
            node("Relu", ["w"], ["y"]),
        ],
        {"x": [2, 0, 3], "w": [4, 3]},
        outputs=("r", "e", "y"),
        inits={"ax": np.array([1]), "st": np.array([5]), "en": np.array([9])},
    )
    w = np.arange(-6, 6, dtype=np.float32).reshape(4, 3)
    out = compile_model(m).run({"x": np.zeros((2, 0, 3), np.float32), "w": w})
    np.testing.assert_array_equal(out["r"], np.zeros((2, 1, 3), np.float32))
    assert out["e"].shape == (0, 3) and out["e"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], np.maximum(w, 0))


def test_reshape_of_a_scalar_to_higher_rank_runs():
    """[] -> [1, 1] (xDSL's expand_shape rejects a rank-0 source; the lowering broadcasts)."""
    from compiler.model import compile_model

    m = model(
        [node("Reshape", ["x", "s"], ["r"]), node("Relu", ["r"])],
        {"x": []},
        inits={"s": np.array([1, 1])},
    )
    for v in (-2.5, 3.5):
        (y,) = compile_model(m).run({"x": np.asarray(v, np.float32)}).values()
        np.testing.assert_array_equal(y, np.full((1, 1), max(v, 0.0), np.float32))


def test_constant_outputs_are_float32():
    # a bool (or int) constant output used to keep its type, so the float32 output buffer the
    # caller allocates was too small and the compiled code wrote past its end
    m = imp([node("Identity", ["c"])], {}, inits={"c": np.array([True, False, True])})
    fn = the(m, func.FuncOp)
    assert str(fn.function_type.outputs.data[0]) == "tensor<3xf32>"


def test_dropout_training_mode():
    # used to be imported as an identity, silently wrong
    inits = {"r": np.array(0.5, np.float32), "t": np.array(True)}
    with pytest.raises(FrontendError, match="training_mode=1 .* not supported"):
        import_onnx(model([node("Dropout", ["x", "r", "t"])], {"x": [2, 3]}, inits=inits))
    inits["r"] = np.array(0.0, np.float32)  # ratio 0: the identity even in training mode
    assert names(imp([node("Dropout", ["x", "r", "t"])], {"x": [2, 3]}, inits=inits)) == [
        "graph.dropout"
    ]


def test_non_constant_attribute_input():
    with pytest.raises(
        FrontendError,
        match=r"Reshape node 'reshape_0': input shape \('s'\) "
        "must be a constant",
    ):
        import_onnx(model([node("Reshape", ["x", "s"])], {"x": [2, 3], "s": [2]}))


def test_bad_shapes_in_model():
    with pytest.raises(FrontendError, match="Conv node 'conv_0': weight has 2 input channels"):
        import_onnx(
            model(
                [node("Conv", ["x", "w"])],
                {"x": [1, 3, 5, 5]},
                inits={"w": np.ones((4, 2, 3, 3), np.float32)},
            )
        )


# ----------------------------------------------------------------------------- malformed models
# Each of these used to end in `ziggurat: internal error` (or a traceback, or an exhausted
# machine); through the CLI each must be exit code 1 and one `ziggurat: error:` line.


def cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    from compiler.cli.main import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def clean_error(
    capsys, tmp_path: Path, m: onnx.ModelProto, *needles: str, command: str = "compile"
) -> str:
    """Compile (or run) `m` through the CLI: one error line naming each of `needles`."""
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    if command == "compile":
        argv = ["compile", str(p), "--emit", "graph"]
    else:
        feeds = {
            i.name: np.ones([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32)
            for i in m.graph.input
            if i.name not in {t.name for t in m.graph.initializer}
            and all(0 < d.dim_value < 100 for d in i.type.tensor_type.shape.dim)
        }
        np.savez(tmp_path / "in.npz", **feeds)
        argv = [
            "run",
            str(p),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(tmp_path / "out.npz"),
        ]
    rc, out, err = cli(capsys, argv)
    assert rc == 1, err
    assert "internal error" not in err and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ziggurat: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _with_dims(t: onnx.TensorProto, dims: list[int]) -> onnx.TensorProto:
    t.dims[:] = dims
    return t


def _short_raw() -> onnx.TensorProto:
    t = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    t.raw_data = t.raw_data[:-4]
    return t


def _long_raw() -> onnx.TensorProto:
    t = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    t.raw_data = t.raw_data + b"\0\0\0"  # not even a whole number of floats
    return t


@pytest.mark.parametrize(
    "tensor, needles",
    [
        (_short_raw(), ["initializer 'w'", "20 bytes of raw_data", "[2, 3]", "need 24"]),
        (_long_raw(), ["initializer 'w'", "27 bytes of raw_data", "need 24"]),
        (
            _with_dims(helper.make_tensor("w", F, [5], [1.0] * 5), [2, 3]),
            ["initializer 'w'", "5 values in float_data", "need 6"],
        ),
        (
            _with_dims(helper.make_tensor("w", TensorProto.INT64, [3], [1, 2, 3]), [2, 3]),
            ["initializer 'w'", "3 values in int64_data", "need 6"],
        ),
        (
            _with_dims(helper.make_tensor("w", F, [1], [1.0]), [2, -3]),
            ["initializer 'w'", "negative dimension"],
        ),
        (
            helper.make_tensor("w", TensorProto.STRING, [1], [b"a"]),
            ["initializer 'w'", "element type STRING"],
        ),
    ],
)
def test_initializer_data_not_matching_its_dims(capsys, tmp_path, tensor, needles):
    m = model([node("Add", ["x", "w"])], {"x": [2, 3]})
    m.graph.initializer.append(tensor)
    clean_error(capsys, tmp_path, m, *needles)


def test_constant_node_data_not_matching_its_dims(capsys, tmp_path):
    c = helper.make_node("Constant", [], ["c"], name="const_0", value=_short_raw())
    m = model([c, node("Add", ["x", "c"])], {"x": [2, 3]})
    clean_error(
        capsys, tmp_path, m, "Constant node 'const_0': attribute 'value'", "20 bytes of raw_data"
    )
    bare = helper.make_node("Constant", [], ["c"], name="const_0")
    m = model([bare, node("Add", ["x", "c"])], {"x": [2, 3]})
    clean_error(capsys, tmp_path, m, "Constant node 'const_0'", "one value attribute")


@pytest.mark.parametrize(
    "nodes, needles",
    [
        ([node("Add", ["x", "nope"])], ["Add node 'add_0'", "input 'nope' is not defined"]),
        # defined, but only by a later node: not topologically sorted
        (
            [node("Add", ["x", "t"]), node("Relu", ["x"], ["t"])],
            ["Add node 'add_0'", "input 't' is not defined"],
        ),
        ([node("Add", ["x", ""])], ["Add node 'add_0'", "required input 1 ('B') is missing"]),
        ([node("Conv", ["x", ""])], ["Conv node 'conv_0'", "required input 1 ('W') is missing"]),
        ([node("Add", ["x"])], ["Add node 'add_0'", "has 1 input; the operator takes 2"]),
        ([node("Reshape", ["x"])], ["Reshape node 'reshape_0'", "has 1 input"]),
        ([node("Relu", ["x", "x"])], ["Relu node 'relu_0'", "has 2 inputs; the operator takes 1"]),
        ([node("Relu", ["x"], ["z"])], ["graph output 'y' is not produced"]),
    ],
)
def test_missing_node_inputs(capsys, tmp_path, nodes, needles):
    clean_error(capsys, tmp_path, model(nodes, {"x": [1, 3, 4, 4]}), *needles)


@pytest.mark.parametrize(
    "op, attrs, needles",
    [
        ("Conv", {"strides": 1.5}, ["'strides' must be of type INTS, got FLOAT"]),
        ("Conv", {"strides": "ab"}, ["'strides' must be of type INTS, got STRING"]),
        ("Conv", {"strides": 2}, ["'strides' must be of type INTS, got INT"]),
        ("Conv", {"group": 1.0}, ["'group' must be of type INT, got FLOAT"]),
        (
            "Softmax",
            {"axis": numpy_helper.from_array(np.array(1))},
            ["'axis' must be of type INT, got TENSOR"],
        ),
        ("Softmax", {"axis": "1"}, ["'axis' must be of type INT, got STRING"]),
        ("LeakyRelu", {"alpha": "x"}, ["'alpha' must be of type FLOAT, got STRING"]),
        ("Cast", {"to": "float"}, ["'to' must be of type INT, got STRING"]),
        ("Cast", {"to": 999}, ["cast of a computed tensor to <unknown data type 999>"]),
        ("MaxPool", {}, ["required attribute 'kernel_shape' is missing"]),
        ("Cast", {}, ["required attribute 'to' is missing"]),
    ],
)
def test_attribute_of_the_wrong_type(capsys, tmp_path, op, attrs, needles):
    ins = ["x", "w"] if op == "Conv" else ["x"]
    m = model([node(op, ins, **attrs)], {"x": [1, 3, 4, 4]}, inits={"w": W})
    clean_error(capsys, tmp_path, m, f"{op} node '{op.lower()}_0'", *needles)


def test_unknown_attribute(capsys, tmp_path):
    # a misspelt attribute used to be ignored silently (onnxruntime refuses the model)
    m = model([node("Conv", ["x", "w"], stride=[2, 2])], {"x": [1, 3, 5, 5]}, inits={"w": W})
    clean_error(
        capsys,
        tmp_path,
        m,
        "Conv node 'conv_0': unknown attribute 'stride'",
        "auto_pad, dilations, group, kernel_shape, pads, strides",
    )


I64 = np.int64


@pytest.mark.parametrize(
    "nodes, inputs, inits, needles",
    [
        # each of these used to be an internal error (ZeroDivisionError, IndexError, TypeError, ...)
        (
            [node("Split", ["x"], ["a", "b"], num_outputs=0)],
            {"x": [4, 2]},
            {},
            ["Split node 'split_0': num_outputs must be positive, got 0"],
        ),
        (
            [node("Slice", ["x", "s", "e"])],
            {"x": [4, 2]},
            {"s": np.array([0, 0]), "e": np.array([2])},
            ["Slice node 'slice_0': ends has 1 value but starts has 2"],
        ),
        (
            [node("Pad", ["x", "p", "", "a"])],
            {"x": [4, 2]},
            {"p": np.array([1]), "a": np.array([0])},
            ["Pad node 'pad_0': pads must have 2 values", "got 1"],
        ),
        (
            [node("Pad", ["x", "p", "v"])],
            {"x": [4, 2]},
            {"p": np.array([1, 0, 0, 0]), "v": np.zeros(0, np.float32)},
            ["Pad node 'pad_0': input constant_value ('v') must hold one number", "shape [0]"],
        ),
        (
            [node("Concat", ["", ""], axis=0)],
            {"x": [4, 2]},
            {},
            ["Concat node 'concat_0': has no inputs"],
        ),
        (
            [node("MaxPool", ["x"], kernel_shape=[2, 2], auto_pad="SAME_UPPER", strides=[0, 1])],
            {"x": [1, 1, 4, 4]},
            {},
            ["MaxPool node 'maxpool_0': strides must be two positive numbers"],
        ),
        (
            [node("MaxPool", ["x"], kernel_shape=[2, 2], auto_pad="FOO")],
            {"x": [1, 1, 4, 4]},
            {},
            ["MaxPool node 'maxpool_0': unknown auto_pad 'FOO'"],
        ),
        (
            [node("Clip", ["x", "m"])],
            {"x": [2, 4]},
            {"m": np.ones(3, np.float32)},
            ["Clip node 'clip_0': input min ('m') must hold one number"],
        ),
        (
            [node("Dropout", ["x", "r", "t"])],
            {"x": [2, 4]},
            {"r": np.float32(0.5), "t": np.ones(0, bool)},
            ["Dropout node 'dropout_0': input training_mode ('t') must hold one number"],
        ),
        (
            [node("Cast", ["c"], ["d"], to=TensorProto.STRING), node("Add", ["x", "d"])],
            {"x": [2]},
            {"c": np.ones(2, np.float32)},
            ["Add node 'add_0': value 'd' has element type <U"],
        ),
        (
            [node("Reshape", ["x", "s"])],
            {"x": [2, 6]},
            {"s": np.array([3, 4, 0])},
            ["Reshape node 'reshape_0'", "beyond the input's rank 2"],
        ),
        # were accepted (float shapes and indices truncated, a mismatched kernel_shape ignored);
        # onnxruntime refuses them
        (
            [node("Reshape", ["x", "s"])],
            {"x": [2, 4]},
            {"s": np.array([8.5], np.float32)},
            ["Reshape node 'reshape_0': input shape ('s') must be a 1-D integer tensor"],
        ),
        (
            [node("Gather", ["x", "i"])],
            {"x": [4, 2]},
            {"i": np.array([0.5], np.float32)},
            ["Gather node 'gather_0': indices ('i') must be integers"],
        ),
        (
            [node("Gather", ["x", "i"])],
            {"x": [4, 2], "i": [2]},
            {},
            ["Gather node 'gather_0': indices have element type f32; supported: i64, i32"],
        ),
        (
            [node("Conv", ["x", "w"], kernel_shape=[2, 2])],
            {"x": [1, 3, 5, 5]},
            {"w": W},
            ["Conv node 'conv_0': kernel_shape [2, 2] does not match", "[3, 3]"],
        ),
        (
            [node("Conv", ["x", "w"])],
            {"x": [1, 3, 5, 5]},
            {"w": np.ones(3, np.float32)},
            ["Conv node 'conv_0': weight must be 4-D"],
        ),
    ],
)
def test_bad_operator_inputs_and_attributes(capsys, tmp_path, nodes, inputs, inits, needles):
    outs = tuple(o for n in nodes[-1:] for o in n.output)
    m = model(nodes, inputs, outputs=outs, inits=inits, opset=18)
    clean_error(capsys, tmp_path, m, *needles, command="run")


def test_names_that_are_not_utf8(capsys, tmp_path):
    m = model([node("Relu", ["x"], ["r"])], {"x": [2]}, outputs=("r",))
    raw = m.SerializeToString().replace(b"\x01r", b"\x01\xe7")  # the output name, 1 byte long
    assert raw != m.SerializeToString()
    clean_error(capsys, tmp_path, onnx.load_from_string(raw), "not valid UTF-8")


def test_names_with_line_breaks_stay_on_one_line(capsys, tmp_path):
    line = clean_error(
        capsys,
        tmp_path,
        model([node("Relu", ["x\n1"])], {"x": [2]}),
        "Relu node 'relu_0': input 'x\\n1' is not defined",
    )
    assert "\n" not in line


def test_element_type_that_onnx_does_not_know(capsys, tmp_path):
    m = model([node("Relu", ["x"])], {"x": [2]})
    m.graph.input[0].type.tensor_type.elem_type = 99
    clean_error(capsys, tmp_path, m, "model input 'x' has element type <unknown data type 99>")


def test_attribute_without_a_type(capsys, tmp_path):
    n = node("Relu", ["x"])
    n.attribute.add(name="junk")  # no type (UNDEFINED) and no value
    clean_error(
        capsys,
        tmp_path,
        model([n], {"x": [2]}),
        "Relu node 'relu_0'",
        "attribute 'junk' has no valid type",
    )


def test_non_ascii_names_work(capsys, tmp_path):
    # names are just strings: SSA names are sanitized, ziggurat.name keeps them (MLIR escapes)
    n = helper.make_node("Relu", ["ä入力"], ["出力"], name="ノード")
    g_ = helper.make_graph(
        [n],
        "グラフ",
        [helper.make_tensor_value_info("ä入力", F, [2, 3])],
        [helper.make_tensor_value_info("出力", F, [2, 3])],
    )
    m = helper.make_model(g_, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.savez(tmp_path / "in.npz", **{"ä入力": x})
    rc, out, err = cli(
        capsys,
        [
            "run",
            str(p),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(tmp_path / "out.npz"),
        ],
    )
    assert (rc, err) == (0, "")
    assert "出力: shape [2, 3]" in out
    with np.load(tmp_path / "out.npz") as res:
        np.testing.assert_array_equal(res["出力"], np.maximum(x, 0))
    rc, out, err = cli(capsys, ["compile", str(p), "--emit", "graph"])
    assert (rc, err) == (0, "")
    assert '{ziggurat.name = "\\C3\\A4\\E5\\85\\A5\\E5\\8A\\9B"}' in out  # "ä入力", UTF-8 bytes
    roundtrip(import_onnx(p))


HUGE = 2**40


@pytest.mark.parametrize(
    "nodes, inputs, inits, needles",
    [
        (
            [node("Relu", ["x"])],
            {"x": [HUGE]},
            {},
            ["input 'x' has shape [1099511627776]", "limit of 2**31 = 2147483648 elements"],
        ),
        ([node("Relu", ["x"])], {"x": [2**20, 2**20]}, {}, ["input 'x'", "2**31"]),
        # computed at import time: refused before numpy allocates 4 TiB
        (
            [node("ConstantOfShape", ["s"], ["c"]), node("Add", ["x", "c"])],
            {"x": [1]},
            {"s": np.array([2**20, 2**20])},
            ["ConstantOfShape node 'constantofshape_0': output 'c'", "limit of 2**28"],
        ),
        (
            [node("ConstantOfShape", ["s"], ["c"]), node("Add", ["x", "c"])],
            {"x": [1]},
            {"s": np.array([HUGE])},
            ["ConstantOfShape node", "[1099511627776]"],
        ),
        # a broadcast of two small constants
        (
            [node("Mul", ["a", "b"], ["c"]), node("Add", ["x", "c"])],
            {"x": [1]},
            {"a": np.ones((2**15, 1), np.float32), "b": np.ones((1, 2**15), np.float32)},
            ["Mul node 'mul_0': output 'c'", "[32768, 32768]", "2**28"],
        ),
        (
            [node("Pad", ["x", "p"])],
            {"x": [2, 2]},
            {"p": np.array([0, 0, HUGE, 0])},
            ["Pad node 'pad_0': output 'y'", "2**31"],
        ),
        (
            [node("Add", ["x", "x2"])],
            {"x": [2**16, 1], "x2": [1, 2**16]},
            {},
            ["Add node 'add_0': output 'y' has shape [65536, 65536]", "2**31"],
        ),
        (
            [node("Reshape", ["x", "s"])],
            {"x": [2, 3]},
            {"s": np.array([2**20, 2**20])},
            ["Reshape node 'reshape_0'", "cannot reshape [2, 3] into [1048576, 1048576]"],
        ),
    ],
)
@pytest.mark.parametrize("command", ["compile", "run"])
def test_huge_tensors_refused_before_allocation(
    capsys, tmp_path, nodes, inputs, inits, needles, command
):
    clean_error(capsys, tmp_path, model(nodes, inputs, inits=inits), *needles, command=command)


def test_huge_input_shape_option(capsys, tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(model([node("Relu", ["x"])], {"x": ["n", 3]}).SerializeToString())
    rc, _, err = cli(capsys, ["compile", str(p), "--emit", "graph", "--input-shape", f"x={HUGE}x3"])
    assert rc == 1 and err.strip().splitlines() == [
        "ziggurat: error: input 'x' has shape [1099511627776, 3] (3298534883328 elements), "
        "over the limit of 2**31 = 2147483648 elements per tensor"
    ]


# ----------------------------------------------------------------------------- external data

SECRET = b"TOP-SECRET-0123456789abcdefghij"[:24]  # 24 bytes: exactly the 6 floats of 'w'


def _external_model(folder: Path, location: str) -> Path:
    w = numpy_helper.from_array(np.zeros(6, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "24")):
        w.external_data.add(key=key, value=value)
    m = model([node("Add", ["x", "w"])], {"x": [6]})
    m.graph.initializer.append(w)
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "m.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def _secret_file(tmp_path: Path) -> Path:
    s = tmp_path / "elsewhere" / "secret.bin"
    s.parent.mkdir()
    s.write_bytes(SECRET)
    return s


def _leaks(tmp_path: Path, *texts: str) -> bool:
    secret_floats = np.frombuffer(SECRET, np.float32)
    found = any(SECRET.decode() in t for t in texts)
    out = tmp_path / "out.npz"
    if out.exists():
        with np.load(out) as res:
            found |= any(np.isin(secret_floats, v).any() for v in res.values())
    return found


@pytest.mark.parametrize("how", ["file", "parent", "dotdot", "absolute", "hardlink"])
@pytest.mark.parametrize("command", ["run", "compile"])
def test_external_data_outside_the_model_folder(capsys, tmp_path, how, command):
    secret = _secret_file(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    if how == "file":  # the data file is a symlink to the secret
        (folder / "data.bin").symlink_to(secret)
        location, needles = "data.bin", ["tensor 'w'", "symbolic link"]
    elif how == "parent":  # a folder on the way is a symlink out of the model's folder
        (folder / "sub").symlink_to(secret.parent, target_is_directory=True)
        location, needles = "sub/secret.bin", ["tensor 'w'", "symbolic link ('sub')"]
    elif how == "dotdot":
        location, needles = "../elsewhere/secret.bin", ["tensor 'w'", "relative path inside"]
    elif how == "absolute":
        location, needles = str(secret), ["tensor 'w'", "relative path inside"]
    else:
        (folder / "data.bin").hardlink_to(secret)
        location, needles = "data.bin", ["tensor 'w'", "hard links"]
    p = _external_model(folder, location)
    np.savez(tmp_path / "in.npz", x=np.zeros(6, np.float32))
    argv = (
        ["run", str(p), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz")]
        if command == "run"
        else ["compile", str(p), "--emit", "graph"]
    )
    rc, out, err = cli(capsys, argv)
    assert rc == 1 and "internal error" not in err
    assert err.count("ziggurat: error: ") == 1 and len(err.strip().splitlines()) == 1
    assert all(n in err for n in needles), err
    assert not _leaks(tmp_path, out, err)


def test_installed_onnx_refuses_symlinked_external_data(tmp_path):
    # the dependency floor (onnx>=1.21): onnx.load alone must refuse it too
    secret = _secret_file(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "data.bin").symlink_to(secret)
    with pytest.raises(Exception, match="symbolic link"):
        onnx.load(str(_external_model(folder, "data.bin")))


def test_external_data_inside_the_model_folder_loads(capsys, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights").mkdir()
    w = np.arange(6, dtype=np.float32)
    (folder / "weights" / "w.bin").write_bytes(w.tobytes())
    p = _external_model(folder, "weights/w.bin")
    x = np.ones(6, np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    rc, _, err = cli(
        capsys,
        [
            "run",
            str(p),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(tmp_path / "out.npz"),
        ],
    )
    assert (rc, err) == (0, "")
    with np.load(tmp_path / "out.npz") as res:
        np.testing.assert_array_equal(res["y"], x + w)


@pytest.mark.parametrize(
    "location, dims, data, needles",
    [
        # no length given: the whole file would be read, whatever its size
        ("w.bin", [6], bytes(1000), ["tensor 'w': its external data holds 1000 bytes", "need 24"]),
        ("w.bin", [HUGE], bytes(24), ["tensor 'w' has shape [1099511627776]", "2**31"]),
        (".", [6], bytes(24), ["tensor 'w' has external data location '.'"]),
        ("missing.bin", [6], bytes(24), ["external data file 'missing.bin' cannot be read"]),
    ],
)
def test_external_data_not_matching_its_dims(capsys, tmp_path, location, dims, data, needles):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(data)
    w = helper.make_tensor("w", F, [1], [0.0])
    w.ClearField("float_data")
    w.dims[:] = dims
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    m = model([node("Add", ["x", "w"])], {"x": [6]})
    m.graph.initializer.append(w)
    (folder / "m.onnx").write_bytes(m.SerializeToString())
    rc, _, err = cli(capsys, ["compile", str(folder / "m.onnx"), "--emit", "graph"])
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "internal" not in err, err
    assert all(n in err for n in needles), err


def test_external_data_in_a_model_proto_is_refused():
    w = numpy_helper.from_array(np.zeros(6, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="w.bin")
    m = model([node("Add", ["x", "w"])], {"x": [6]})
    m.graph.initializer.append(w)
    with pytest.raises(FrontendError, match="initializer 'w' keeps its data in an external file"):
        import_onnx(m)


# -- opsets below 11: upgraded by onnx's version converter ---------------------------------


def test_an_opset_9_model_is_upgraded_and_imported():
    """Opset 9 Upsample-era semantics: BatchNormalization with its 5 outputs declared as 1 and
    an opset-9 Dropout; the converter rewrites them and the import sees opset 13."""
    m = model(
        [node("Relu", ["x"], ["r"]), node("Dropout", ["r"], ["y", "mask"], ratio=0.5)],
        {"x": [2, 3]},
        opset=9,
    )
    module = import_onnx(m)
    assert names(module) == ["graph.relu", "graph.dropout"]


def test_an_opset_1_model_is_upgraded_too():
    m = model([node("Relu", ["x"])], {"x": [2, 3]}, opset=1)
    assert names(import_onnx(m)) == ["graph.relu"]


def test_the_importer_itself_refuses_an_old_opset():
    from compiler.frontend.onnx import Importer

    m = model([node("Relu", ["x"])], {"x": [2, 3]}, opset=9)
    with pytest.raises(FrontendError, match=r"ONNX opset 9 is not supported \(need >= 11"):
        Importer(m, None).run()


def test_a_model_the_converter_cannot_upgrade_names_the_reason():
    # Upsample was removed in opset 10; its opset-9 form with a scales *input* is convertible,
    # but a model naming an unknown operator is not
    m = model([node("NoSuchOp", ["x"])], {"x": [2, 3]}, opset=9)
    with pytest.raises(
        FrontendError, match="could not be upgraded to opset 13 by onnx's version converter"
    ):
        import_onnx(m)


# -- declared opsets: only versions onnx defines ----------------------------------------------


@pytest.mark.parametrize("version", [2**31, 2**40, 99, 0, -1])
def test_an_opset_onnx_does_not_define_is_refused_naming_the_domain(version: int) -> None:
    """2**31 reached onnx's get_schema (a C int) as an internal TypeError; 0 and 99 imported
    with the newest schemas (opset 0 then took Slice's legacy attribute path: KeyError)."""
    m = model([node("Relu", ["x"])], {"x": [2, 3]})
    m.opset_import[0].version = version
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(
        FrontendError,
        match=rf"^model declares opset {version} for the default domain \(ai\.onnx\); "
        rf"onnx [\d.]+ defines opsets 1\.\.{newest}$",
    ):
        import_onnx(m)


@pytest.mark.parametrize(
    ("domain", "version", "message"),
    [
        ("ai.onnx.ml", 99, "declares opset 99 for domain 'ai.onnx.ml'; onnx "),
        ("com.example", 0, "declares opset 0 for domain 'com.example'; an opset version is 1.."),
        ("com.example", 2**31, "opset 2147483648 for domain 'com.example'; an opset version is"),
        ("ai.onnx", 2**31, "declares opset 2147483648 for domain 'ai.onnx'; onnx "),
    ],
)
def test_other_domains_opsets_are_checked_too(domain: str, version: int, message: str) -> None:
    m = model([node("Relu", ["x"])], {"x": [2, 3]})
    m.opset_import.append(helper.make_opsetid(domain, version))
    with pytest.raises(FrontendError, match=message.replace(".", r"\.").replace("(", r"\(")):
        import_onnx(m)


def test_a_model_file_with_a_bad_opset_is_named(tmp_path: Path) -> None:
    m = model([node("Relu", ["x"])], {"x": [2, 3]})
    m.opset_import[0].version = 2**31
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    with pytest.raises(FrontendError, match=f"^{path} declares opset 2147483648 "):
        import_onnx(path)


@pytest.mark.parametrize("opsets", [[], [("ai.onnx.ml", 3)]], ids=["none", "ml-only"])
def test_default_domain_operators_need_its_opset_declared(opsets: list) -> None:
    """Slice with starts/ends inputs under no default-domain opset: KeyError 'starts' (the
    importer read the missing opset as 0, Slice's attribute form)."""
    starts, ends = np.array([0], np.int64), np.array([2], np.int64)
    m = model([node("Slice", ["x", "s", "e"])], {"x": [4, 6]}, inits={"s": starts, "e": ends})
    del m.opset_import[:]
    m.opset_import.extend(helper.make_opsetid(d, v) for d, v in opsets)
    with pytest.raises(
        FrontendError,
        match=r"^model uses operators of the default domain \(Slice node 'slice_0'\) but "
        r"declares no opset for it",
    ):
        import_onnx(m)


@pytest.mark.parametrize(
    "attrs", [{}, {"starts": [0]}, {"ends": [2]}], ids=["neither", "no-ends", "no-starts"]
)
def test_an_opset_9_slice_without_its_attributes_names_the_node(attrs: dict) -> None:
    """Before opset 10 Slice takes starts and ends as attributes: the version converter failed
    on a missing one with an assertion naming neither the node nor the operator."""
    m = model([node("Slice", ["x"], **attrs)], {"x": [4, 6]}, opset=9)
    with pytest.raises(
        FrontendError, match=r"^Slice node 'slice_0': required attribute '(starts|ends)' is missing"
    ):
        import_onnx(m)
    ok = model([node("Slice", ["x"], starts=[0], ends=[2])], {"x": [4, 6]}, opset=9)
    assert names(import_onnx(ok)) == ["graph.slice"]


# -- Sum, Mean, LRN, Dropout's mask ---------------------------------------------------------


def test_sum_and_mean_chain_broadcasting_adds():
    m = model([node("Sum", ["a", "b", "c"])], {"a": [2, 3], "b": [3], "c": [1, 3]})
    assert names(import_onnx(m)) == ["graph.add", "graph.add"]
    m = model([node("Mean", ["a", "b"])], {"a": [2, 3], "b": [2, 3]})
    assert names(import_onnx(m)) == ["graph.add", "graph.mul"]


def test_lrn_is_composed_from_a_channel_window_average():
    m = model([node("LRN", ["x"], size=3, alpha=1e-3, beta=0.75, bias=2.0)], {"x": [1, 5, 4, 4]})
    ops = names(import_onnx(m))
    assert ops == [
        "graph.mul",
        "graph.reshape",
        "graph.avg_pool",
        "graph.reshape",
        "graph.mul",
        "graph.add",
        "graph.pow",
        "graph.div",
    ]


def test_lrn_of_rank_2_is_an_error_naming_the_node():
    m = model([node("LRN", ["x"], size=3)], {"x": [4, 4]})
    with pytest.raises(FrontendError, match=r"lrn_0.*rank 3 or more"):
        import_onnx(m)


def test_dropout_mask_output_is_all_true_in_inference():
    unused = model([node("Dropout", ["x"], ["y", "mask"])], {"x": [2, 3]}, opset=13)
    assert names(import_onnx(unused)) == ["graph.dropout"]
    used = model([node("Dropout", ["x"], ["y", "mask"])], {"x": [2, 3]}, ("y", "mask"), opset=13)
    used.graph.output[1].type.tensor_type.elem_type = TensorProto.BOOL
    m = import_onnx(used)
    mask = the(m, g.ConstantOp)
    np.testing.assert_array_equal(g.constant_value(mask), np.ones((2, 3), bool))
