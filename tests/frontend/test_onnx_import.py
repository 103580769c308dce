"""ONNX import: one tiny model per operator (op names, attributes, result shapes) and every error."""

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
    m = imp([node("Conv", ["x", "w", "b"], **attrs)], {"x": [1, 3, size, size]},
            inits={"w": W, "b": np.zeros(4, np.float32)})
    conv = the(m, g.ConvOp)
    assert ints(conv.pads) == pads
    assert conv.bias is not None
    assert out_shapes(m) == [shape]


def test_depthwise_conv():
    m = imp([node("Conv", ["x", "w"], group=3, pads=[1, 1, 1, 1])], {"x": [1, 3, 5, 5]},
            inits={"w": np.ones((3, 1, 3, 3), np.float32)})
    assert the(m, g.ConvOp).group.value.data == 3
    assert out_shapes(m) == [(1, 3, 5, 5)]


# ----------------------------------------------------------------------------- linear algebra


def test_gemm():
    m = imp([node("Gemm", ["a", "b", "c"], alpha=0.5, transB=1)], {"a": [2, 3]},
            inits={"b": np.ones((4, 3), np.float32), "c": np.ones(4, np.float32)})
    op = the(m, g.GemmOp)
    assert op.trans_b.value.data == 1 and op.alpha.value.data == 0.5
    assert out_shapes(m) == [(2, 4)]


@pytest.mark.parametrize("a, b, out", [([2, 3], [3, 4], (2, 4)), ([3], [2, 3, 5], (2, 5)),
                                        ([7, 1, 2, 3], [4, 3, 6], (7, 4, 2, 6)), ([3], [3], ())])
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
    [("Sqrt", "sqrt", 17), ("Exp", "exp", 17), ("Log", "log", 17), ("Neg", "neg", 17),
     ("Abs", "abs", 17), ("Reciprocal", "reciprocal", 17), ("Relu", "relu", 17),
     ("Sigmoid", "sigmoid", 17), ("Tanh", "tanh", 17), ("Erf", "erf", 17),
     ("HardSwish", "hard_swish", 14), ("Identity", "identity", 17), ("Dropout", "dropout", 17),
     ("LeakyRelu", "leaky_relu", 17), ("HardSigmoid", "hard_sigmoid", 17), ("Gelu", "gelu", 20)],
)
def test_unary(op, name, opset):
    m = imp([node(op, ["x"])], {"x": [2, 3]}, opset=opset)
    assert names(m) == [f"graph.{name}"]
    assert out_shapes(m) == [(2, 3)]


def test_unary_attributes():
    m = imp([node("LeakyRelu", ["x"], ["a"], alpha=0.3), node("HardSigmoid", ["a"], ["b"], beta=0.4),
             node("Gelu", ["b"], approximate="tanh")], {"x": [2]}, opset=20)
    assert the(m, g.LeakyReluOp).alpha.value.data == pytest.approx(0.3)
    assert the(m, g.HardSigmoidOp).beta.value.data == pytest.approx(0.4)
    assert the(m, g.GeluOp).approximate.data == "tanh"


def test_clip():
    m = imp([node("Clip", ["x", "lo", "hi"])], {"x": [3]},
            inits={"lo": np.float32(0), "hi": np.float32(6)}, opset=11)
    clip = the(m, g.ClipOp)
    assert (clip.min.value.data, clip.max.value.data) == (0.0, 6.0)
    m = imp([node("Clip", ["x", "lo"])], {"x": [3]}, inits={"lo": np.float32(-1)})
    assert the(m, g.ClipOp).max.value.data == float("inf")
    assert not [o for o in m.walk() if isinstance(o, g.ConstantOp)]


def test_cast():
    m = imp([node("Cast", ["x"], to=F)], {"x": [3]})
    assert names(m) == ["graph.cast"]
    # a cast of a constant is folded away
    m = imp([node("Cast", ["k"], ["kf"], to=F), node("Add", ["x", "kf"])], {"x": [3]},
            inits={"k": np.array([1, 2, 3], np.int64)})
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
    m = imp([node("LayerNormalization", ["x", "s", "b"], axis=-1, epsilon=1e-3)], {"x": [2, 3, 4]},
            inits={"s": np.ones(4, np.float32), "b": np.zeros(4, np.float32)})
    op = the(m, g.LayerNormOp)
    assert op.axis.value.data == 2 and op.bias is not None
    assert op.epsilon.value.data == pytest.approx(1e-3)


def test_layer_norm_mean_and_inv_std_dev_outputs():
    # the optional outputs are built from graph ops; reduced dims are kept as 1
    m = imp([node("LayerNormalization", ["x", "s"], ["y", "mean", "isd"], axis=1)],
            {"x": [2, 3, 4]}, outputs=("y", "mean", "isd"), inits={"s": np.ones((3, 4), np.float32)})
    assert out_shapes(m) == [(2, 3, 4), (2, 1, 1), (2, 1, 1)]
    assert names(m) == ["graph.layer_norm", "graph.reduce_mean", "graph.sub", "graph.mul",
                        "graph.reduce_mean", "graph.add", "graph.sqrt", "graph.reciprocal"]


def test_batch_norm():
    p = np.ones(3, np.float32)
    m = imp([node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)],
            {"x": [1, 3, 4, 4]}, inits={"s": p, "b": p, "m": p, "v": p})
    assert names(m) == ["graph.batch_norm"]
    assert out_shapes(m) == [(1, 3, 4, 4)]


# ----------------------------------------------------------------------------- pooling


def test_max_pool():
    m = imp([node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
            {"x": [1, 2, 6, 6]})
    assert the(m, g.MaxPoolOp).ceil_mode.value.data == 1
    assert out_shapes(m) == [(1, 2, 3, 3)]
    m = imp([node("MaxPool", ["x"], kernel_shape=[2, 2], auto_pad="SAME_UPPER")], {"x": [1, 2, 5, 5]})
    assert ints(the(m, g.MaxPoolOp).pads) == (0, 0, 1, 1)


def test_avg_pool():
    m = imp([node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                  count_include_pad=1)], {"x": [1, 2, 5, 5]})
    assert the(m, g.AvgPoolOp).count_include_pad.value.data == 1
    assert out_shapes(m) == [(1, 2, 5, 5)]


@pytest.mark.parametrize("op, name", [("GlobalAveragePool", "global_avg_pool"),
                                      ("GlobalMaxPool", "global_max_pool")])
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
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i0"], ["n"], axis=0),
             node("Unsqueeze", ["n", "ax"], ["n1"]), node("Concat", ["n1", "m1"], ["t"], axis=0),
             node("Reshape", ["x", "t"])]
    m = imp(nodes, {"x": [2, 3, 4]}, inits={"i0": np.array(0), "ax": np.array([0]),
                                            "m1": np.array([-1])})
    assert names(m) == ["graph.reshape"] and out_shapes(m) == [(2, 12)]


def test_flatten_transpose_concat():
    m = imp([node("Flatten", ["x"], ["f"], axis=-1), node("Transpose", ["f"], ["t"]),
             node("Concat", ["t", "t"], axis=-1)], {"x": [2, 3, 4]})
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
    inits = {"st": np.array([-1, 1]), "en": np.array([-(2**63), 100]), "ax": np.array([1, 0]),
             "sp": np.array([-2, 1])}
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
        nodes = [node("Unsqueeze", ["x"], ["u"], axes=[0, -1]), node("Squeeze", ["u"], axes=[0, -1])]
        inits = {}
    m = imp(nodes, {"x": [2, 3]}, inits=inits, opset=opset)
    assert ints(the(m, g.UnsqueezeOp).axes) == (0, 3)
    assert out_shapes(m) == [(2, 3)]
    m = imp([node("Squeeze", ["x"])], {"x": [1, 3, 1]}, opset=opset)
    assert out_shapes(m) == [(3,)]


def test_gather():
    m = imp([node("Gather", ["x", "i"], axis=1)], {"x": [2, 5]},
            inits={"i": np.array([[0, -1, 2]])})
    op = the(m, g.GatherOp)
    assert str(op.indices.type) == "tensor<1x3xi64>"
    assert out_shapes(m) == [(2, 1, 3)]


def test_gather_embedding_table():
    m = imp([node("Gather", ["emb", "i"])], {"x": [1]},
            inits={"emb": np.ones((10, 4), np.float32), "i": np.array([3, 1])},
            outputs=("y",))
    # all inputs are constants: the lookup is folded
    assert names(m) == []
    assert out_shapes(m) == [(2, 4)]


def test_pad():
    m = imp([node("Pad", ["x", "p", "v"])], {"x": [2, 3]},
            inits={"p": np.array([1, 0, 1, -1]), "v": np.float32(2.0)})
    op = the(m, g.PadOp)
    assert ints(op.pads) == (1, 0, 1, -1) and op.value.value.data == 2.0
    assert out_shapes(m) == [(4, 2)]
    m = imp([node("Pad", ["x", "p", "", "a"])], {"x": [2, 3]},
            inits={"p": np.array([1, 2]), "a": np.array([-1])}, opset=18)
    assert ints(the(m, g.PadOp).pads) == (0, 1, 0, 2)


def test_constant_constant_of_shape_shape():
    k = helper.make_tensor("k", F, [3], [1.0, 2.0, 3.0])
    nodes = [node("Constant", [], ["c"], value=k), node("Shape", ["x"], ["s"]),
             node("ConstantOfShape", ["s"], ["z"], value=helper.make_tensor("v", F, [1], [0.5])),
             node("Add", ["z", "c"], ["a"]), node("Add", ["x", "a"])]
    m = imp(nodes, {"x": [2, 3]})
    assert names(m) == ["graph.add"]
    np.testing.assert_array_equal(g.constant_value(the(m, g.ConstantOp)),
                                  np.array([[1.5, 2.5, 3.5]] * 2, np.float32))


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
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk_0"),
             helper.make_node("NonMaxSuppression", ["x", "x"], ["n"], name="nms_1"),
             helper.make_node("TopK", ["x", "k"], ["v2", "i2"], name="topk_3"),
             node("Relu", ["x"])]
    with pytest.raises(FrontendError) as e:
        import_onnx(model(nodes, {"x": [4]}, inits={"k": np.array([1])}))
    assert str(e.value) == ("unsupported ONNX operators (opset 17): NonMaxSuppression "
                            "(node 'nms_1'), TopK (nodes 'topk_0', 'topk_3')")


def test_unknown_input_shape_name():
    with pytest.raises(FrontendError, match="input_shapes names unknown input 'z'"):
        import_onnx(model([node("Relu", ["x"])], {"x": [2]}), {"z": [1]})


def test_unknown_dim():
    with pytest.raises(FrontendError,
                       match=r"input 'x' has unknown dimension 0 \('batch'\); pass its shape"):
        import_onnx(model([node("Relu", ["x"])], {"x": ["batch", 3]}))


def test_non_float_input():
    with pytest.raises(FrontendError,
                       match="model input 'x' has element type INT64; only float32 inputs"):
        import_onnx(model([node("Relu", ["x"])], {"x": [2]}, in_type=TensorProto.INT64))


def test_zero_size_input():
    with pytest.raises(FrontendError, match="input 'x' has a zero-size dimension 1"):
        import_onnx(model([node("Relu", ["x"])], {"x": [2, 0]}))


def test_zero_size_result():
    # used to crash later (ZeroDivisionError while building the loop nest)
    with pytest.raises(FrontendError, match=r"Slice node 'slice_0': output 'y' would have the "
                                            r"zero-size shape \[0, 3\]"):
        import_onnx(model([node("Slice", ["x", "st", "en"])], {"x": [4, 3]},
                          inits={"st": np.array([5]), "en": np.array([9])}))


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
        "graph.dropout"]


def test_non_constant_attribute_input():
    with pytest.raises(FrontendError, match=r"Reshape node 'reshape_0': input shape \('s'\) "
                                            "must be a constant"):
        import_onnx(model([node("Reshape", ["x", "s"])], {"x": [2, 3], "s": [2]}))


def test_old_opset():
    with pytest.raises(FrontendError, match="opset 9 is not supported"):
        import_onnx(model([node("Relu", ["x"])], {"x": [2]}, opset=9))


def test_bad_shapes_in_model():
    with pytest.raises(FrontendError, match="Conv node 'conv_0': weight has 2 input channels"):
        import_onnx(model([node("Conv", ["x", "w"])], {"x": [1, 3, 5, 5]},
                          inits={"w": np.ones((4, 2, 3, 3), np.float32)}))
