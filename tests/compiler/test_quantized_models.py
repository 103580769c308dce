"""Models with float16, int8, uint8, int16 and uint16 inputs and outputs (computed in float32 or
int32, converted at the boundary) and the linear quantization operators: exact against
onnxruntime (integers), and float16 within float16's rounding."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.errors import InputError
from compiler.frontend.errors import FrontendError
from compiler.model import compile_model
from tests.compiler.test_element_types import make, reference

F, F16, U8, I8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8
I16, U16, I32 = TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32

rng = np.random.default_rng(0)


def exact(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    atol: float = 0.0,
    onnx_reference: bool = False,
) -> None:
    """Equal to onnxruntime's outputs, or (`onnx_reference`) to ONNX's own reference evaluator:
    onnxruntime on an AVX2 core without VNNI (Zen 3) adds u8 x s8 products in pairs saturated
    to int16 (vpmaddubsw), so its integer products of large operands are not exact there."""
    ours = compile_model(model).run(feeds)
    if onnx_reference:
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:
        expected = reference(model, feeds)
    for (name, o), r in zip(ours.items(), expected, strict=True):
        assert o.dtype == r.dtype, name
        assert o.shape == r.shape, name
        np.testing.assert_allclose(o.astype(np.float64), r.astype(np.float64), rtol=0, atol=atol)


def test_float16_inputs_and_outputs_are_computed_in_float32():
    x = rng.standard_normal((3, 8)).astype(np.float16)
    w = rng.standard_normal((8, 4)).astype(np.float16)
    m = make(
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
        [("x", F16, [3, 8])],
        [("y", F16, [3, 4])],
        [("w", w)],
    )
    compiled = compile_model(m)
    assert compiled.inputs[0].dtype == np.float16 and compiled.outputs[0].dtype == np.float16
    assert compiled.inputs[0].compute_dtype == np.float32
    (ours,) = compiled.run({"x": x}).values()
    exact_f32 = np.maximum(x.astype(np.float32) @ w.astype(np.float32), 0)
    assert ours.dtype == np.float16
    # one rounding to float16, at the output
    np.testing.assert_array_equal(ours, exact_f32.astype(np.float16))
    (ort_out,) = reference(m, {"x": x})
    np.testing.assert_allclose(ours.astype(np.float32), ort_out.astype(np.float32), atol=1e-2)


@pytest.mark.parametrize(
    "dtype,onnx_type", [(np.uint8, U8), (np.int8, I8), (np.int16, I16), (np.uint16, U16)]
)
def test_narrow_integer_inputs_and_outputs(dtype, onnx_type):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (4, 6), endpoint=True).astype(dtype)
    m = make(
        [
            helper.make_node("Cast", ["x"], ["xf"], to=F),
            helper.make_node("Identity", ["x"], ["same"]),
        ],
        [("x", onnx_type, [4, 6])],
        [("xf", F, [4, 6]), ("same", onnx_type, [4, 6])],
    )
    exact(m, {"x": x})


def test_a_narrow_input_of_the_wrong_dtype_is_refused():
    m = make([helper.make_node("Identity", ["x"], ["y"])], [("x", U8, [2])], [("y", U8, [2])])
    with pytest.raises(InputError, match="has dtype int8; the model expects uint8"):
        compile_model(m).run({"x": np.zeros(2, np.int8)})


@pytest.mark.parametrize("zp_type", [np.uint8, np.int8, np.int16, np.uint16])
def test_quantize_dequantize_per_tensor(zp_type):
    x = (rng.standard_normal((2, 3, 5)) * 40).astype(np.float32)
    x[0, 0, :4] = [0.5, 1.5, 2.5, -0.5]  # halves round to even
    zp = np.asarray(np.iinfo(zp_type).min // 2 + 7, dtype=zp_type)
    m = make(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
            helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"]),
        ],
        [("x", F, [2, 3, 5])],
        [("q", helper.np_dtype_to_tensor_dtype(np.dtype(zp_type)), [2, 3, 5]), ("y", F, [2, 3, 5])],
        [("s", np.float32(0.5)), ("zp", zp)],
        opset=21,
    )
    exact(m, {"x": x})


def test_quantize_per_axis_and_blocked():
    x = (rng.standard_normal((2, 4, 6)) * 10).astype(np.float32)
    scale = np.asarray([0.1, 0.2, 0.3, 0.4], np.float32)
    zp = np.asarray([0, 10, -10, 3], np.int8)
    blocked_scale = rng.uniform(0.05, 0.2, (2, 4, 2)).astype(np.float32)
    m = make(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=1),
            helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=1),
            helper.make_node("QuantizeLinear", ["x", "bs"], ["qb"], axis=2, block_size=3),
        ],
        [("x", F, [2, 4, 6])],
        [("q", I8, [2, 4, 6]), ("y", F, [2, 4, 6]), ("qb", U8, [2, 4, 6])],
        [("s", scale), ("zp", zp), ("bs", blocked_scale)],
        opset=21,
    )
    exact(m, {"x": x})


def test_dynamic_quantize_linear():
    x = rng.standard_normal((3, 7)).astype(np.float32)
    m = make(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "zp"])],
        [("x", F, [3, 7])],
        [("y", U8, [3, 7]), ("s", F, []), ("zp", U8, [])],
    )
    exact(m, {"x": x}, atol=1e-7)


def test_dequantize_of_an_int8_input_feeding_float_math():
    q = rng.integers(-128, 127, (4, 4), endpoint=True).astype(np.int8)
    m = make(
        [
            helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["d"]),
            helper.make_node("Sigmoid", ["d"], ["y"]),
        ],
        [("q", I8, [4, 4])],
        [("y", F, [4, 4])],
        [("s", np.float32(0.05)), ("zp", np.int8(-3))],
    )
    exact(m, {"q": q}, atol=1e-6)


def test_unsupported_quantized_types_are_named():
    m = make(
        [
            helper.make_node(
                "QuantizeLinear", ["x", "s"], ["q"], output_dtype=TensorProto.FLOAT8E4M3FN
            )
        ],
        [("x", F, [4])],
        [("q", TensorProto.FLOAT8E4M3FN, [4])],
        [("s", np.float32(0.5))],
        opset=21,
    )
    with pytest.raises(FrontendError, match="QuantizeLinear node .*output_dtype FLOAT8E4M3FN"):
        compile_model(m)


def test_a_double_input_is_refused_with_the_supported_types():
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        FrontendError, match="input 'x' has element type DOUBLE; supported: .*FLOAT16"
    ):
        compile_model(m)


@pytest.mark.parametrize("to", [I8, U8, I16, U16, TensorProto.UINT32])
def test_cast_of_computed_integers_wraps_into_the_narrow_type(to):
    x = np.asarray([0, 1, -1, 127, 128, -129, 255, 256, 40000, -70000, 2**31 - 1], np.int64)
    xf = np.asarray([0.7, -0.7, 300.9, -300.9, 1e5], np.float32)
    m = make(
        [
            helper.make_node("Cast", ["x"], ["y"], to=to),
            helper.make_node("Cast", ["y"], ["z"], to=TensorProto.INT64),
            helper.make_node("Cast", ["xf"], ["yf"], to=to),
            helper.make_node("Cast", ["yf"], ["zf"], to=TensorProto.INT64),
        ],
        [("x", TensorProto.INT64, [11]), ("xf", F, [5])],
        [("z", TensorProto.INT64, [11]), ("zf", TensorProto.INT64, [5])],
    )
    out = compile_model(m).run({"x": x, "xf": xf})
    dtype = helper.tensor_dtype_to_np_dtype(to)
    np.testing.assert_array_equal(out["z"], x.astype(dtype).astype(np.int64))
    np.testing.assert_array_equal(out["zf"], xf.astype(np.int64).astype(dtype).astype(np.int64))


def test_cast_to_float16_rounds_like_float16():
    """Normal values tie to even, subnormals keep 2**-24 steps, 65520 and beyond overflow."""
    x = np.concatenate(
        [
            rng.standard_normal(200).astype(np.float32) * 1000,
            np.asarray(
                [1 + 2**-11, 1 + 3 * 2**-11, 3e-6, -5.96e-8, 2.9e-8, 65504, 65519.9, 65520, -1e6],
                np.float32,
            ),
        ]
    )
    m = make(
        [
            helper.make_node("Cast", ["x"], ["h"], to=F16),
            helper.make_node("Cast", ["h"], ["y"], to=F),
        ],
        [("x", F, [x.size])],
        [("y", F, [x.size])],
    )
    (ours,) = compile_model(m).run({"x": x}).values()
    with np.errstate(over="ignore"):  # numpy warns as it overflows to inf, as it should
        expected = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(ours, expected)


def test_matmul_integer_accumulates_exactly_in_int32():
    """K = 4096 products of up to 255 * 128: far beyond float32's exact integers."""
    a = rng.integers(0, 255, (3, 4096), endpoint=True).astype(np.uint8)
    b = rng.integers(-128, 127, (4096, 5), endpoint=True).astype(np.int8)
    m = make(
        [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])],
        [("a", U8, [3, 4096]), ("b", I8, [4096, 5])],
        [("y", I32, [3, 5])],
        [("azp", np.uint8(7)), ("bzp", np.asarray([0, 1, -1, 5, -128], np.int8))],
    )
    exact(m, {"a": a, "b": b}, onnx_reference=True)


def test_conv_integer_with_padding_and_groups():
    x = rng.integers(0, 255, (1, 4, 7, 7), endpoint=True).astype(np.uint8)
    w = rng.integers(0, 255, (6, 2, 3, 3), endpoint=True).astype(np.uint8)
    m = make(
        [
            helper.make_node(
                "ConvInteger", ["x", "w", "xzp", "wzp"], ["y"], pads=[1, 1, 1, 1], group=2
            )
        ],
        [("x", U8, [1, 4, 7, 7])],
        [("y", I32, [1, 6, 7, 7])],
        [("w", w), ("xzp", np.uint8(128)), ("wzp", np.uint8(3))],
    )
    exact(m, {"x": x})


def test_qlinear_matmul_and_conv_requantize_like_onnxruntime():
    """A quantized conv (per-channel weight scales, int32 bias) feeding a quantized matmul, as
    an int8 model exported with static quantization has them."""
    x = rng.integers(0, 255, (1, 3, 6, 6), endpoint=True).astype(np.uint8)
    w = rng.integers(-127, 127, (4, 3, 3, 3), endpoint=True).astype(np.int8)
    wm = rng.integers(-127, 127, (6, 5), endpoint=True).astype(np.int8)
    inits = [
        ("xs", np.float32(0.02)),
        ("xzp", np.uint8(120)),
        ("w", w),
        ("ws", np.asarray([0.01, 0.02, 0.005, 0.03], np.float32)),
        ("wzp", np.zeros(4, np.int8)),
        ("ys", np.float32(0.05)),
        ("yzp", np.uint8(100)),
        ("bias", rng.integers(-500, 500, 4).astype(np.int32)),
        ("shape", np.asarray([6, 6], np.int64)),
        ("wm", wm),
        ("wms", np.float32(0.01)),
        ("wmzp", np.int8(0)),
        ("ms", np.float32(0.1)),
        ("mzp", np.uint8(128)),
    ]
    m = make(
        [
            helper.make_node(
                "QLinearConv",
                ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "bias"],
                ["c"],
                pads=[1, 1, 1, 1],
                strides=[2, 2],
            ),
            helper.make_node("Reshape", ["c", "shape"], ["r"]),
            helper.make_node(
                "QLinearMatMul", ["r", "ys", "yzp", "wm", "wms", "wmzp", "ms", "mzp"], ["y"]
            ),
        ],
        [("x", U8, [1, 3, 6, 6])],
        [("c", U8, [1, 4, 3, 3]), ("y", U8, [6, 5])],
        inits,
    )
    exact(m, {"x": x}, onnx_reference=True)
