"""compiler/tensor_spec.py: the boundary that CompiledModel and loaded packages share.

Input checks name the input and the problem; results convert widened outputs back to their
declared type, trim data-dependent outputs to their run-time length and hide the lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import InputError
from compiler.tensor_spec import TensorSpec, check_inputs, results

SPECS = [
    TensorSpec("x", (2, 3), np.dtype("float32")),
    TensorSpec("h", (2,), np.dtype("float16"), np.dtype("float32")),
]


def test_inputs_in_order_and_widened() -> None:
    x, h = np.ones((2, 3), np.float32), np.array([1.5, 2], np.float16)
    got = check_inputs(SPECS, {"h": h, "x": x})
    assert got[0] is x or np.shares_memory(got[0], x)
    assert got[1].dtype == np.float32 and got[1].tolist() == [1.5, 2.0]


@pytest.mark.parametrize(
    "feeds, message",
    [
        ({"y": 1}, "unknown input name(s) ['y']; the model's inputs are ['x', 'h']"),
        ({"x": np.ones((2, 3), np.float32)}, "missing input 'h' (shape [2], float16)"),
        (
            {"x": np.ones((2, 3)), "h": np.ones(2, np.float16)},
            "input 'x' has dtype float64; the model expects float32",
        ),
        (
            {"x": np.ones((3, 2), np.float32), "h": np.ones(2, np.float16)},
            "input 'x' has shape [3, 2]; the model expects [2, 3]",
        ),
    ],
)
def test_input_errors(feeds: dict, message: str) -> None:
    with pytest.raises(InputError) as e:
        check_inputs(SPECS, feeds)
    assert str(e.value) == message


def test_results_trimmed_converted_lengths_hidden() -> None:
    specs = [
        TensorSpec("idx", (2, 5), np.dtype("int64"), None, 1),
        TensorSpec("idx_length", (), np.dtype("int64"), None, None, "idx"),
        TensorSpec("h", (2,), np.dtype("float16"), np.dtype("float32")),
    ]
    outs = [np.arange(10).reshape(2, 5), np.array(3), np.array([0.5, 1], np.float32)]
    got = results(specs, outs)
    assert list(got) == ["idx", "h"]
    assert got["idx"].tolist() == [[0, 1, 2], [5, 6, 7]]
    assert got["h"].dtype == np.float16
