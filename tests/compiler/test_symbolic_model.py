"""compiler/symbolic_model.py: symbols read from the model, bound from each call's arrays and
checked (agreement between inputs, static dims, bounds, `past + seq` spelled by exporters), one
specialization per binding, and clear errors for `dims` that do not fit the model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler.errors import InputError
from compiler.symbolic_model import DimError, SymbolicModel, compile_symbolic, input_dims


def _model() -> onnx.ModelProto:
    """y = concat(past, x, axis 1) + mask (x: [batch, seq, 4], past: [batch, past, 4],
    mask: [batch, past + seq, 4]); z = relu(w) with w's dims unnamed."""
    f = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("x", f, ["batch", "seq", 4]),
        helper.make_tensor_value_info("past", f, ["batch", "past", 4]),
        helper.make_tensor_value_info("mask", f, ["batch", "past + seq", 4]),
        helper.make_tensor_value_info("w", f, [None, 2]),
    ]
    outputs = [
        helper.make_tensor_value_info("y", f, ["batch", "past + seq", 4]),
        helper.make_tensor_value_info("z", f, [None, 2]),
    ]
    nodes = [
        helper.make_node("Concat", ["past", "x"], ["cat"], axis=1),
        helper.make_node("Add", ["cat", "mask"], ["y"]),
        helper.make_node("Relu", ["w"], ["z"]),
    ]
    m = helper.make_model(
        helper.make_graph(nodes, "sym", inputs, outputs),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    m.ir_version = 9
    return m


def _feeds(batch: int, seq: int, past: int, mask: int | None = None, w: int = 3):
    rng = np.random.default_rng(batch * 100 + seq * 10 + past)
    total = past + seq if mask is None else mask
    return {
        "x": rng.standard_normal((batch, seq, 4)).astype(np.float32),
        "past": rng.standard_normal((batch, past, 4)).astype(np.float32),
        "mask": rng.standard_normal((batch, total, 4)).astype(np.float32),
        "w": rng.standard_normal((w, 2)).astype(np.float32),
    }


def test_symbols_are_read_from_the_inputs() -> None:
    dims = input_dims(_model())
    assert dims["x"] == ["batch", "seq", 4]
    assert dims["mask"] == ["batch", "past + seq", 4]
    assert dims["w"] == ["w.0", 2]  # an unknown dim without a name
    model = SymbolicModel(_model(), cache=False)
    assert list(model.symbols) == ["batch", "seq", "past", "past + seq", "w.0"]
    assert model.symbols["batch"] == [("x", 0), ("past", 0), ("mask", 0)]


def test_runs_every_size_with_one_compile_each() -> None:
    """Specialized per size (one_compile=False; the default compiles this model once)."""
    model = compile_symbolic(
        _model(), {"seq": (1, 16), "past": (0, 16)}, one_compile=False, cache=False
    )
    for batch, seq, past in [(1, 1, 0), (3, 7, 9), (1, 1, 0), (2, 16, 16)]:
        feeds = _feeds(batch, seq, past)
        got = model.run(feeds)
        cat = np.concatenate([feeds["past"], feeds["x"]], axis=1)
        np.testing.assert_array_equal(got["y"], cat + feeds["mask"])
        np.testing.assert_array_equal(got["z"], np.maximum(feeds["w"], 0))
    assert model.compiles == 3  # (1, 1, 0) again is the first specialization


def test_least_recently_used_specializations_are_closed() -> None:
    model = compile_symbolic(_model(), max_loaded=1, one_compile=False, cache=False)
    model.run(_feeds(1, 2, 0))
    model.run(_feeds(1, 3, 0))
    model.run(_feeds(1, 2, 0))  # dropped when (1, 3, 0) came: made again
    assert model.compiles == 3
    model.close()


@pytest.mark.parametrize(
    "feeds,message",
    [
        (
            _feeds(1, 17, 0),
            r"symbol 'seq' is 17 in input 'x' \(axis 1\), outside the bounds 1\.\.16 the model",
        ),
        (
            {**_feeds(1, 2, 0), "past": np.zeros((2, 0, 4), np.float32)},
            r"symbol 'batch' is 1 in input 'x' \(axis 0\) but 2 in input 'past' \(axis 0\)",
        ),
        (
            {**_feeds(1, 2, 0), "x": np.zeros((1, 2, 5), np.float32)},
            r"input 'x' has shape \[1, 2, 5\]; the model expects \[batch, seq, 4\]",
        ),
        (
            _feeds(1, 2, 3, mask=4),
            r"input 'mask' has size 4 on axis 1, whose symbol 'past \+ seq' is 5 ",
        ),
        ({k: v for k, v in _feeds(1, 2, 0).items() if k != "w"}, r"missing input 'w' \(shape"),
        ({**_feeds(1, 2, 0), "v": np.zeros(1)}, r"unknown input name\(s\) \['v'\]"),
    ],
)
def test_bad_sizes_are_one_clear_error_before_any_compile(feeds, message: str) -> None:
    model = compile_symbolic(_model(), {"seq": (1, 16)}, cache=False)
    with pytest.raises(InputError, match=message):
        model.run(feeds)
    assert model.compiles == 0


@pytest.mark.parametrize(
    "dims,input_shapes,message",
    [
        (
            {"sequence": (1, 8)},
            None,
            r"dims names 'sequence', which the model's inputs do not "
            r"have; its symbols are 'batch', 'seq'",
        ),
        ({"seq": (8, 1)}, None, r"dims\['seq'\] = \(8, 1\): bounds must satisfy 0 <= lo <= hi"),
        ({"seq": "8"}, None, r"dims\['seq'\] must be a size or a \(lo, hi\) pair"),
        ({"seq": (1, 4)}, {"x": [1, 8, 4]}, r"input_shapes fix 'seq' to 8, outside"),
        (None, {"x": [1, 8]}, r"input_shapes gives rank 2 for input 'x' \[batch, seq, 4\]"),
        (None, {"q": [1]}, r"input_shapes names unknown input 'q'"),
    ],
)
def test_dims_that_do_not_fit_the_model(dims, input_shapes, message: str) -> None:
    with pytest.raises(DimError, match=message):
        SymbolicModel(_model(), dims, input_shapes, cache=False)


def test_fixed_symbols_give_static_shapes() -> None:
    model = SymbolicModel(_model(), {"batch": 2, "seq": 3, "past": 0, "w.0": 5})
    assert model.fixed_shapes() == {"x": [2, 3, 4], "past": [2, 0, 4], "w": [5, 2]}
    with pytest.raises(
        InputError,
        match=r"input 'x' has shape \[1, 3, 4\]; the model expects "
        r"\[2, 3, 4\] \('batch' = 2\)",
    ):
        model.bind({k: v.shape for k, v in _feeds(1, 3, 0, w=5).items()})


def test_specialize_needs_every_symbol() -> None:
    model = SymbolicModel(_model(), cache=False)
    with pytest.raises(InputError, match=r"specialize needs a size for each of the symbols"):
        model.specialize(batch=1)


def test_specialize_derives_symbols_spelled_as_arithmetic() -> None:
    model = SymbolicModel(_model(), cache=False)
    compiled = model.specialize(**{"batch": 2, "seq": 3, "past": 4, "w.0": 1})
    assert compiled.inputs[2].shape == (2, 7, 4)  # mask: [batch, past + seq, 4]
    assert model.specialize(**{"batch": 2, "seq": 3, "past": 4, "w.0": 1}) is compiled
