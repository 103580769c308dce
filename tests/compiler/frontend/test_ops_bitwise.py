"""Bitwise operators (compiler/frontend/ops/bitwise.py): BitwiseAnd/Or/Xor/Not, BitShift with
every shift amount (opset 28: out-of-range amounts give the sign extension alone) and BitCast,
against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.model import compile_model
from tests.compiler.test_element_types import make

I32, I64, F = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT
rng = np.random.default_rng(0)


@pytest.mark.parametrize("dtype,onnx_type", [(np.int32, I32), (np.int64, I64)])
def test_bitwise_logic(dtype, onnx_type):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (3, 5), dtype=dtype)
    b = rng.integers(info.min, info.max, (5,), dtype=dtype)
    ops = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
    nodes = [helper.make_node(op, ["a", "b"], [op]) for op in ops]
    nodes.append(helper.make_node("BitwiseNot", ["a"], ["not"]))
    m = make(
        nodes,
        [("a", onnx_type, [3, 5]), ("b", onnx_type, [5])],
        [(n, onnx_type, [3, 5]) for n in [*ops, "not"]],
        opset=18,
    )
    out = compile_model(m).run({"a": a, "b": b})
    for op, fn in ops.items():
        np.testing.assert_array_equal(out[op], fn(a, b))
    np.testing.assert_array_equal(out["not"], np.invert(a))


def _shift(x: np.ndarray, y: np.ndarray, left: bool) -> np.ndarray:
    """The opset-28 definition, element by element with Python integers."""
    bits = x.dtype.itemsize * 8
    out = []
    for a, s in zip(x.tolist(), y.tolist(), strict=True):
        if s < 0 or s >= bits:
            out.append(-1 if (not left and a < 0) else 0)
        elif left:
            v = (a << s) & ((1 << bits) - 1)
            out.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
        else:
            out.append(a >> s)
    return np.asarray(out, dtype=x.dtype)


@pytest.mark.parametrize("dtype,onnx_type", [(np.int32, I32), (np.int64, I64)])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_every_amount(dtype, onnx_type, direction):
    bits = np.dtype(dtype).itemsize * 8
    y = np.arange(-3, bits + 3, dtype=dtype)
    x = rng.integers(-1000, 1000, y.size).astype(dtype)
    x[:4] = [np.iinfo(dtype).min, np.iinfo(dtype).max, -1, 1]
    m = make(
        [helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
        [("x", onnx_type, [y.size]), ("y", onnx_type, [y.size])],
        [("z", onnx_type, [y.size])],
        opset=28,
    )
    (z,) = compile_model(m).run({"x": x, "y": y}).values()
    np.testing.assert_array_equal(z, _shift(x, y, direction == "LEFT"))


def test_bitcast_float32_and_int32_round_trip():
    x = np.asarray([0.0, -0.0, 1.5, -2.25, np.inf, 3.4e38, 1e-45], np.float32)
    m = make(
        [
            helper.make_node("BitCast", ["x"], ["i"], to=I32),
            helper.make_node("BitCast", ["i"], ["f"], to=F),
        ],
        [("x", F, [7])],
        [("i", I32, [7]), ("f", F, [7])],
        opset=26,
    )
    out = compile_model(m).run({"x": x})
    np.testing.assert_array_equal(out["i"], x.view(np.int32))
    np.testing.assert_array_equal(out["f"].view(np.int32), x.view(np.int32))


def _unchecked(node, in_type, out_type, opset):
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("a", in_type, [2])],
        [helper.make_tensor_value_info("y", out_type, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_bitwise_errors_name_the_node():
    m = _unchecked(helper.make_node("BitwiseAnd", ["a", "a"], ["y"], name="band"), F, F, 18)
    with pytest.raises(FrontendError, match="BitwiseAnd node 'band': input 'a' must be an integer"):
        compile_model(m)
    m = _unchecked(helper.make_node("BitCast", ["a"], ["y"], to=I64, name="bc"), F, I64, 26)
    with pytest.raises(FrontendError, match="BitCast node 'bc': bitcast of f32 to INT64"):
        compile_model(m)
