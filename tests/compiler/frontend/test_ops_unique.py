"""Unique (compiler/frontend/ops/unique.py): compiled, run on inputs with duplicates (different
numbers of distinct values per run, so the trimmed lengths vary) and compared with a numpy
statement of the spec and with onnxruntime (which implements Unique for float32 and int64)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, I32, I64, B = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL
OUTPUTS = ("y", "indices", "inverse", "counts")


def unique_model(elem: int, shape: list[int], outputs=OUTPUTS, **attributes):
    node = helper.make_node("Unique", ["x"], list(outputs), **attributes)
    types = [(o, elem if k == 0 else I64) for k, o in enumerate(outputs) if o]
    return graph_model([node], [("x", elem, shape)], types, opset=17)


def spec_unique(x: np.ndarray, axis: int | None, sorted_: int) -> list[np.ndarray]:
    """The spec's results from numpy.unique (sorted), reordered by first occurrence for
    sorted=0 (gathering Y along the axis, which onnx's reference gets wrong)."""
    source = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis % x.ndim
    y, idx, inv, cnt = np.unique(source, True, True, True, axis=None if axis is None else ax)
    inv = inv.reshape(-1)
    if not sorted_:
        order = np.argsort(idx, kind="stable")
        slot = np.empty_like(order)
        slot[order] = np.arange(len(order))
        idx, inv, cnt = idx[order], slot[inv], cnt[order]
        y = np.take(source, idx, axis=ax)
    return [y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)]


def check(ours: dict[str, np.ndarray], expected: list[np.ndarray], outputs=OUTPUTS) -> None:
    for name, ref in zip(outputs, expected, strict=False):
        if name:
            assert ours[name].shape == ref.shape, name
            assert ours[name].dtype == ref.dtype, name
            np.testing.assert_array_equal(ours[name], ref, err_msg=name)


@pytest.mark.parametrize(
    "dtype, elem, shape, axis, sorted_",
    [
        (np.float32, F, [3, 5], None, 1),
        (np.int64, I64, [12], None, 0),
        (np.float32, F, [5, 2, 3], 0, 1),
        (np.int64, I64, [3, 6, 2], -2, 0),
        (np.int32, I32, [2, 3, 5], 2, 1),
    ],
)
def test_unique_matches_spec_and_onnxruntime(dtype, elem, shape, axis, sorted_):
    attributes = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    model = unique_model(elem, shape, **attributes)
    compiled = compile_model(model)
    rng = np.random.default_rng(7)
    lengths = set()
    for high in (1, 2, 3):  # from one distinct value to several
        x = rng.integers(0, high, shape).astype(dtype)
        ours = compiled.run({"x": x})
        expected = spec_unique(x, axis, sorted_)
        check(ours, expected)
        if elem != I32:  # onnxruntime has no int32 Unique
            check(ours, onnxruntime_run(model, {"x": x}))
        lengths.add(ours["y"].shape[0 if axis is None else axis])
    assert len(lengths) > 1  # the trimmed length follows the data


def test_unique_of_bool_slices_unsorted():
    model = unique_model(B, [2, 5], axis=1, sorted=0)
    x = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 1, 0]], dtype=np.bool_)
    check(compile_model(model).run({"x": x}), spec_unique(x, 1, 0))


def test_nan_equals_nan_and_sorts_last():
    """NaN is one value, after every number (numpy's unique); -0.0 equals 0.0 and Y keeps the
    first occurrence."""
    x = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, -np.inf, np.inf, 1.0], dtype=np.float32)
    ours = compile_model(unique_model(F, [8])).run({"x": x})
    np.testing.assert_array_equal(ours["y"], [-np.inf, -0.0, 1.0, np.inf, np.nan])
    assert np.signbit(ours["y"][1])
    np.testing.assert_array_equal(ours["indices"], [5, 3, 1, 6, 0])
    np.testing.assert_array_equal(ours["inverse"], [4, 2, 4, 1, 1, 0, 3, 2])
    np.testing.assert_array_equal(ours["counts"], [1, 2, 2, 1, 2])
    # slices compare position by position, NaN equal to NaN
    x2 = np.array([[1, np.nan], [1, np.nan], [0, 2]], dtype=np.float32)
    ours = compile_model(unique_model(F, [3, 2], axis=0)).run({"x": x2})
    np.testing.assert_array_equal(ours["y"], [[0, 2], [1, np.nan]])
    np.testing.assert_array_equal(ours["counts"], [1, 2])


def test_only_the_named_outputs_and_unsorted_y_alone():
    """Y alone with sorted=0 is in order of first occurrence (onnx's reference sorts it)."""
    x = np.array([3, 1, 3, 2, 1, 5], dtype=np.float32)
    model = unique_model(F, [6], outputs=("y",), sorted=0)
    np.testing.assert_array_equal(compile_model(model).run({"x": x})["y"], [3, 1, 2, 5])
    outputs = ("y", "", "inverse")
    model = unique_model(F, [6], outputs=outputs, sorted=0)
    ours = compile_model(model).run({"x": x})
    assert sorted(ours) == ["inverse", "y"]
    check(ours, spec_unique(x, None, 0), outputs)


def test_reading_unique_values_is_refused():
    model = graph_model(
        [
            helper.make_node("Unique", ["x"], ["u"], name="distinct"),
            helper.make_node("Neg", ["u"], ["y"], name="negate"),
        ],
        [("x", F, [6])],
        [("y", F)],
        opset=17,
    )
    with pytest.raises(FrontendError, match=r"Neg node 'negate'.*'u' has a data-dependent"):
        import_onnx(model)


def test_inverse_indices_have_a_static_shape_others_can_read():
    model = graph_model(
        [
            helper.make_node("Unique", ["x"], ["u", "", "inv"]),
            helper.make_node("Neg", ["inv"], ["y"]),
        ],
        [("x", F, [5])],
        [("y", I64)],
        opset=17,
    )
    x = np.array([4, 4, 2, 7, 2], dtype=np.float32)
    np.testing.assert_array_equal(compile_model(model).run({"x": x})["y"], [-1, -1, 0, -2, 0])


def test_limits_and_bad_attributes_are_refused():
    with pytest.raises(FrontendError, match=r"Unique over 8200 elements needs 67240000 pairwise"):
        import_onnx(unique_model(F, [8200]))
    with pytest.raises(FrontendError, match=r"Unique over 400 slices of 500 elements"):
        import_onnx(unique_model(F, [400, 500], axis=0))
    with pytest.raises(FrontendError, match=r"axis 2 is out of range for an input of rank 2"):
        import_onnx(unique_model(F, [3, 4], axis=2))
    with pytest.raises(FrontendError, match=r"sorted must be 0 or 1, got 2"):
        import_onnx(unique_model(F, [3], sorted=2))
