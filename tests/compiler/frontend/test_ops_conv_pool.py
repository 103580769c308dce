"""Convolution and pooling over 1, 2 and 3 spatial dims, ConvTranspose, LpPool and ReduceProd:
small ONNX models compiled end to end and compared with onnxruntime (or ONNX's reference
evaluator where onnxruntime lacks a case), plus the errors for attributes that cannot work."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.parser import Parser

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from compiler.pass_runner import make_context
from dialects import graph as g
from tests.support.references import onnxruntime_run

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32

rng = np.random.default_rng(0)


def make(node, inputs, inits=(), opset=18, out_type=F) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, out_type, None) for o in node.output],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray], ref: str) -> list:
    if ref == "onnx":
        return list(ReferenceEvaluator(model).run(None, feeds))
    return onnxruntime_run(model, feeds)


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], ref: str = "ort") -> None:
    ours = list(compile_model(model).run(feeds).values())
    refs = reference(model, feeds, ref)
    assert len(ours) == len(refs)
    for o, r in zip(ours, refs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        if np.issubdtype(r.dtype, np.floating):
            scale = float(np.max(np.abs(r))) or 1.0
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(o, r)


def x_of(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# -- Conv -------------------------------------------------------------------------------------

CONVS = [
    # x shape, w shape, attributes
    ((1, 3, 11), (4, 3, 3), {}),
    ((2, 4, 12), (6, 2, 3), {"strides": [2], "pads": [1, 2], "group": 2}),
    ((1, 2, 13), (3, 2, 3), {"dilations": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 10), (3, 2, 4), {"strides": [3], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 5, 6, 7), (3, 2, 3, 2, 3), {"pads": [1, 0, 1, 0, 1, 2], "strides": [1, 2, 2]}),
    ((1, 4, 5, 5, 5), (4, 1, 3, 3, 3), {"group": 4, "dilations": [1, 2, 1], "pads": [1] * 6}),
]


@pytest.mark.parametrize("xs,ws,attrs", CONVS)
@pytest.mark.parametrize("const_w", [True, False])
def test_conv_nd(xs, ws, attrs, const_w: bool) -> None:
    w, b = x_of(*ws), x_of(ws[0])
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    inputs = [("x", F, list(xs))]
    feeds = {"x": x_of(*xs)}
    if const_w:
        model = make(node, inputs, [("w", w), ("b", b)])
    else:
        model = make(node, [*inputs, ("w", F, list(ws))], [("b", b)])
        feeds["w"] = w
    # onnxruntime rejects dilations with auto_pad SAME_*: ONNX's reference evaluator instead
    check(model, feeds, "onnx" if "dilations" in attrs and "auto_pad" in attrs else "ort")


def test_conv1d_then_batchnorm_folds() -> None:
    """fold-batchnorm scales a 3-D weight per output channel."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "t", "m", "v"], ["y"]),
    ]
    ch = 4
    inits = [("w", x_of(ch, 3, 3))] + [(n, x_of(ch)) for n in "stm"]
    inits.append(("v", np.abs(x_of(ch)) + 0.5))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [1, 3, 9])],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(v, n) for n, v in inits],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    check(model, {"x": x_of(1, 3, 9)})


# -- pooling ----------------------------------------------------------------------------------

POOLS = [
    # x shape, attributes
    ((1, 2, 11), {"kernel_shape": [3]}),
    ((1, 2, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1}),
    ((2, 3, 10), {"kernel_shape": [4], "auto_pad": "SAME_UPPER", "strides": [3]}),
    ((1, 2, 12), {"kernel_shape": [2], "dilations": [3], "pads": [1, 1]}),
    ((1, 2, 9, 9), {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 1]}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "pads": [1, 1, 0] * 2}),
    ((1, 1, 6, 7, 8), {"kernel_shape": [2, 2, 3], "dilations": [2, 1, 2], "ceil_mode": 1}),
]


@pytest.mark.parametrize("xs,attrs", POOLS)
def test_max_pool_nd(xs, attrs) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], **attrs)
    check(make(node, [("x", F, list(xs))]), {"x": x_of(*xs)})


@pytest.mark.parametrize("xs,attrs", POOLS)
@pytest.mark.parametrize("include", [0, 1])
def test_average_pool_nd(xs, attrs, include: int) -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=include, **attrs)
    # onnxruntime rejects dilated AveragePool; ONNX's reference evaluator is the reference
    ref = "onnx" if "dilations" in attrs else "ort"
    check(make(node, [("x", F, list(xs))], opset=19), {"x": x_of(*xs)}, ref)


@pytest.mark.parametrize(
    "xs,attrs",
    [
        ((2, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        (
            (1, 2, 6, 7),
            {"kernel_shape": [2, 3], "storage_order": 1, "ceil_mode": 1, "strides": [2, 2]},
        ),
        ((2, 1, 5, 6), {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 0, 0, 1]}),
        ((1, 2, 4, 5, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]}),
    ],
)
def test_max_pool_indices(xs, attrs) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", F, list(xs))],
        [
            helper.make_tensor_value_info("y", F, None),
            helper.make_tensor_value_info("i", I64, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.round(x_of(*xs))  # ties: the first tap in scan order wins
    check(model, {"x": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("xs", [(2, 3, 7), (1, 2, 3, 4, 5)])
def test_global_pool_nd(op: str, xs) -> None:
    check(make(helper.make_node(op, ["x"], ["y"]), [("x", F, list(xs))]), {"x": x_of(*xs)})


LP_POOLS = [
    ((1, 2, 10), {"kernel_shape": [3], "p": 1}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "pads": [1, 1, 1, 0], "strides": [2, 2]}),
    ((1, 2, 6, 6), {"kernel_shape": [2, 2], "p": 3, "auto_pad": "SAME_UPPER"}),
    ((1, 1, 4, 5, 6), {"kernel_shape": [2, 2, 2], "p": 2, "strides": [2, 2, 2]}),
]


@pytest.mark.parametrize("xs,attrs", LP_POOLS)
def test_lp_pool(xs, attrs) -> None:
    node = helper.make_node("LpPool", ["x"], ["y"], **attrs)
    check(make(node, [("x", F, list(xs))]), {"x": x_of(*xs)})


def test_lp_pool_ceil_mode_and_dilations() -> None:
    """opset 18's ceil_mode and dilations. onnxruntime lacks them and ONNX's reference scales a
    window that overhangs the input by kernel size / taps inside, so numpy is the reference."""
    node = helper.make_node(
        "LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], dilations=[1, 2], ceil_mode=1
    )
    x = x_of(1, 2, 7, 8)
    (y,) = compile_model(make(node, [("x", F, [1, 2, 7, 8])])).run({"x": x}).values()
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)))  # the ceil-mode overhang (zeros)
    want = np.stack(
        [
            np.stack(
                [
                    np.sqrt((xp[:, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 3 : 2] ** 2).sum((2, 3)))
                    for j in range(4)
                ],
                -1,
            )
            for i in range(4)
        ],
        -2,
    )
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


# -- ConvTranspose ------------------------------------------------------------------------------

CONV_TRANSPOSES = [
    # x shape, w shape, attributes
    ((1, 2, 5), (2, 3, 3), {}),
    ((1, 2, 5), (2, 3, 3), {"strides": [3], "output_padding": [1], "pads": [1, 2]}),
    ((1, 4, 4), (4, 1, 3), {"group": 2, "strides": [2], "dilations": [2]}),
    ((1, 1, 3, 4), (1, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 3), (2, 2, 2, 3), {"strides": [2, 3], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 4, 4), (2, 2, 3, 3), {"pads": [1, 2, 2, 1], "dilations": [2, 1]}),
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"strides": [2, 1, 3], "pads": [0, 1, 0, 1, 0, 1]}),
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_TRANSPOSES)
def test_conv_transpose(xs, ws, attrs) -> None:
    w, b = x_of(*ws), x_of(ws[1] * attrs.get("group", 1))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    check(make(node, [("x", F, list(xs))], [("w", w), ("b", b)]), {"x": x_of(*xs)})


def test_conv_transpose_runtime_weight() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], group=2)
    model = make(node, [("x", F, [1, 4, 3, 3]), ("w", F, [4, 3, 2, 3])])
    check(model, {"x": x_of(1, 4, 3, 3), "w": x_of(4, 3, 2, 3)})


# -- ReduceProd -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,elem", [(np.float32, F), (np.int64, I64), (np.int32, I32)], ids=["f32", "i64", "i32"]
)
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, -1], 0), (None, 1)])
def test_reduce_prod(dtype, elem, axes, keepdims: int) -> None:
    ins = ["x"] if axes is None else ["x", "axes"]
    node = helper.make_node("ReduceProd", ins, ["y"], keepdims=keepdims)
    inits = [] if axes is None else [("axes", np.array(axes, np.int64))]
    x = rng.uniform(0.5, 1.5, (2, 3, 4)).astype(dtype)
    if dtype != np.float32:
        x = rng.integers(-3, 4, (2, 3, 4)).astype(dtype)
    check(make(node, [("x", elem, [2, 3, 4])], inits, out_type=elem), {"x": x})


def test_reduce_prod_opset13_attribute_and_noop() -> None:
    node = helper.make_node("ReduceProd", ["x"], ["y"], axes=[2], keepdims=0)
    x = x_of(2, 3, 4)
    check(make(node, [("x", F, [2, 3, 4])], opset=13), {"x": x})
    noop = helper.make_node("ReduceProd", ["x"], ["y"], noop_with_empty_axes=1)
    check(make(noop, [("x", F, [2, 3, 4])]), {"x": x})


# -- errors -------------------------------------------------------------------------------------


def _error(node, inputs, inits=(), opset=18) -> str:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with pytest.raises(FrontendError) as e:
        import_onnx(m)
    return str(e.value)


@pytest.mark.parametrize(
    "op,attrs,message",
    [
        ("MaxPool", {"kernel_shape": [2, 2]}, "kernel_shape must be one positive number"),
        (
            "MaxPool",
            {"kernel_shape": [2], "strides": [0]},
            "strides must be one positive number",
        ),
        (
            "AveragePool",
            {"kernel_shape": [2], "pads": [1]},
            "pads must be two non-negative numbers (begins, ends)",
        ),
        ("AveragePool", {"kernel_shape": [2], "count_include_pad": 2}, "count_include_pad"),
        ("MaxPool", {"kernel_shape": [2], "ceil_mode": 3}, "ceil_mode must be 0 or 1"),
        ("MaxPool", {"kernel_shape": [2], "auto_pad": "SAME"}, "unknown auto_pad 'SAME'"),
        ("MaxPool", {"kernel_shape": [20]}, "larger than padded input"),
        ("MaxPool", {}, "'kernel_shape' is missing"),
        ("LpPool", {"kernel_shape": [2], "p": 0}, "p must be positive"),
    ],
)
def test_pool_errors(op: str, attrs, message: str) -> None:
    text = _error(helper.make_node(op, ["x"], ["y"], name="P", **attrs), [("x", [1, 2, 9])])
    assert f"{op} node 'P'" in text and message in text


def test_pool_rank_and_indices_errors() -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="P", kernel_shape=[2])
    assert "rank >= 3" in _error(node, [("x", [4, 9])])
    node = helper.make_node(
        "MaxPool", ["x"], ["y", "i"], name="P", kernel_shape=[2], storage_order=2
    )
    assert "storage_order must be 0 or 1" in _error(node, [("x", [1, 2, 9])])


def test_conv_errors() -> None:
    def conv(ws, **attrs) -> str:
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="C", **attrs)
        return _error(node, [("x", [1, 4, 9])], [("w", x_of(*ws))])

    assert "weight must be 3-D" in conv((2, 4, 3, 3))
    assert "kernel_shape [2] does not match" in conv((2, 4, 3), kernel_shape=[2])
    assert "dilations must be one positive number" in conv((2, 4, 3), dilations=[1, 1])
    assert "input channels per group" in conv((2, 3, 3))
    assert "group 3 must divide" in conv((3, 1, 3), group=3)


def test_conv_transpose_errors() -> None:
    def ct(ws, xs=(1, 4, 5), **attrs) -> str:
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="T", **attrs)
        return _error(node, [("x", list(xs))], [("w", x_of(*ws))])

    assert "weight must be 3-D" in ct((4, 2, 3, 3))
    assert "do not fit 4 input channels" in ct((3, 2, 3))
    assert "do not fit 4 input channels" in ct((4, 2, 3), group=3)
    assert "output_padding must be one non-negative number" in ct((4, 2, 3), output_padding=[-1])
    assert "output_shape must be one positive number" in ct((4, 2, 3), output_shape=[3, 4])
    assert "leave an empty output" in ct((4, 2, 3), pads=[4, 3])
    assert "unknown auto_pad" in ct((4, 2, 3), auto_pad="FULL")


def test_window_ops_default_to_any_rank() -> None:
    """A parsed window op without strides/pads/dilations (empty arrays) means ones, zeros and
    ones for its rank; builders spell them out."""
    src = """func.func @f(%x: tensor<1x2x9xf32>, %w: tensor<3x2x3xf32>, %v: tensor<1x2x4x4x4xf32>)
        -> (tensor<1x3x7xf32>, tensor<1x2x3x3x3xf32>) {
      %y = graph.conv %x, %w : (tensor<1x2x9xf32>, tensor<3x2x3xf32>) -> tensor<1x3x7xf32>
      %p = graph.avg_pool %v {kernel = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32>
      func.return %y, %p : tensor<1x3x7xf32>, tensor<1x2x3x3x3xf32>
    }"""
    module = Parser(make_context(), src).parse_module()
    module.verify()
    conv = next(op for op in module.walk() if isinstance(op, g.ConvOp))
    assert tuple(conv.strides.get_values()) == ()
    built = g.ConvOp(conv.x, conv.w, None)
    assert tuple(built.pads.get_values()) == (0, 0) and built.results[0].type == conv.result.type
