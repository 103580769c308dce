"""The data-movement compositions of compiler/frontend/ops (GatherND, GatherElements, Resize,
Pad modes, ScatterND/ScatterElements, OneHot, EyeLike, Compress, CenterCropPad,
ReverseSequence): small models compiled end to end and compared with onnxruntime or onnx's
reference implementation, the Resize maps checked against the reference on a grid of
attributes without compiling, and the errors for what is refused."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.frontend.ops.resize import axis_map
from compiler.model import compile_model
from tests.support.references import onnxruntime_run

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL

rng = np.random.default_rng(0)


def make(nodes, inputs, outputs, inits=(), opset=18) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(model: onnx.ModelProto, feeds: dict, use_ort: bool = True, rtol: float = 1e-5) -> None:
    if use_ort:
        refs = onnxruntime_run(model, feeds)
    else:
        refs = ReferenceEvaluator(model).run(None, feeds)
    ours = compile_model(model).run(feeds)
    for (name, o), r in zip(ours.items(), refs, strict=True):
        assert o.shape == r.shape, name
        assert o.dtype == r.dtype, name
        if np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(
                o, r, rtol=rtol, atol=rtol * max(1.0, float(np.abs(r).max()))
            )
        else:
            np.testing.assert_array_equal(o, r)


def refused(model: onnx.ModelProto) -> str:
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    return str(e.value)


def floats(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------- gathers


@pytest.mark.parametrize(
    "ds, qs, b",
    [((2, 3, 4), (5, 2), 0), ((3, 4, 2), (3, 2, 1), 1), ((2, 3, 4), (2, 1, 3), 0)],
)
def test_gather_nd_with_run_time_indices(ds, qs, b):
    """Linear index = batch offset + sum(idx * strides), negative indices counted from the end."""
    k = qs[-1]
    idx = rng.integers(-np.array(ds[b : b + k]), np.array(ds[b : b + k]), size=qs).astype(np.int64)
    out = [*qs[:-1], *ds[b + k :]]
    model = make(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)],
        [("x", F, ds), ("i", I64, qs)],
        [("y", F, out)],
    )
    check(model, {"x": floats(*ds), "i": idx})


def test_gather_nd_with_constant_indices_and_int_data():
    idx = np.array([[1, -1], [0, 0]], dtype=np.int64)
    model = make(
        [helper.make_node("GatherND", ["x", "i"], ["y"])],
        [("x", I64, [2, 3, 2])],
        [("y", I64, [2, 2])],
        [("i", idx)],
    )
    check(model, {"x": rng.integers(-9, 9, (2, 3, 2)).astype(np.int64)})


@pytest.mark.parametrize("axis", [0, -1])
def test_gather_elements_with_run_time_indices(axis):
    ds, qs = (3, 4), (2, 4) if axis == 0 else (3, 2)
    extent = ds[axis]
    idx = rng.integers(-extent, extent, size=qs).astype(np.int32)
    model = make(
        [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
        [("x", F, ds), ("i", I32, qs)],
        [("y", F, qs)],
    )
    check(model, {"x": floats(*ds), "i": idx})


# ----------------------------------------------------------------------------- resize


def _resize_ref(x, mode, ctm, scales=None, sizes=None, **attrs):
    node = helper.make_node(
        "Resize",
        ["x", "", "s" if scales is not None else "", "z" if sizes is not None else ""],
        ["y"],
        mode=mode,
        coordinate_transformation_mode=ctm,
        **attrs,
    )
    feeds = {"x": x}
    if scales is not None:
        feeds["s"] = np.asarray(scales, dtype=np.float32)
    if sizes is not None:
        feeds["z"] = np.asarray(sizes, dtype=np.int64)
    return ReferenceEvaluator(node, opsets={"": 19}).run(None, feeds)[0]


_CTMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize(
    "mode, extra",
    [
        ("nearest", {"nearest_mode": "round_prefer_floor"}),
        ("nearest", {"nearest_mode": "round_prefer_ceil"}),
        ("nearest", {"nearest_mode": "floor"}),
        ("nearest", {"nearest_mode": "ceil"}),
        ("linear", {}),
        ("linear", {"antialias": 1}),
        ("cubic", {}),
        ("cubic", {"cubic_coeff_a": -0.5, "exclude_outside": 1}),
        ("cubic", {"antialias": 1}),
    ],
)
def test_resize_axis_maps_match_the_reference(mode, extra):
    """The separable per-axis maps reproduce onnx's reference on every coordinate transform,
    up- and downscaling, by scales (fractional ones too) and by sizes (to float32 precision:
    the reference computes cubic weights in float32, its cubic_coeff_a being one)."""
    x = rng.standard_normal((1, 7)).astype(np.float64)
    for ctm, (scale, size) in itertools.product(
        _CTMS, [(2.0, None), (0.6, None), (1.7, None), (None, 3), (None, 11), (None, 1)]
    ):
        kw = {k: v for k, v in extra.items()}
        if scale is not None:
            want = _resize_ref(x, mode, ctm, scales=[1.0, scale], **kw)
            s = float(np.float32(scale))  # the scales input is float32
            out = int(s * 7)
        else:
            want = _resize_ref(x, mode, ctm, sizes=[1, size], **kw)
            out, s = size, size / 7
        dense, _ = axis_map(
            7,
            out,
            s,
            mode,
            ctm,
            nearest_mode=kw.get("nearest_mode", "round_prefer_floor"),
            cubic_coeff_a=kw.get("cubic_coeff_a", -0.75),
            exclude_outside=bool(kw.get("exclude_outside", 0)),
            antialias=bool(kw.get("antialias", 0)),
        )
        np.testing.assert_allclose(
            x @ dense.T, want, rtol=1e-5, atol=1e-5, err_msg=f"{ctm} {scale} {size}"
        )


def _resize_model(x_shape, out_shape, elem=F, scales=None, sizes=None, roi=None, **attrs):
    inits = []
    names = ["x", "", "", ""]
    if roi is not None:
        names[1] = "roi"
        inits.append(("roi", np.asarray(roi, dtype=np.float32)))
    if scales is not None:
        names[2] = "scales"
        inits.append(("scales", np.asarray(scales, dtype=np.float32)))
    if sizes is not None:
        names[3] = "sizes"
        inits.append(("sizes", np.asarray(sizes, dtype=np.int64)))
    return make(
        [helper.make_node("Resize", names, ["y"], **attrs)],
        [("x", elem, x_shape)],
        [("y", elem, out_shape)],
        inits,
        opset=19,
    )


def test_resize_linear_by_sizes_matches_onnxruntime():
    """The models' case: bilinear half_pixel upsampling to given sizes (gathers + weights)."""
    model = _resize_model(
        [1, 2, 5, 6],
        [1, 2, 9, 14],
        sizes=[1, 2, 9, 14],
        mode="linear",
        coordinate_transformation_mode="half_pixel",
    )
    check(model, {"x": floats(1, 2, 5, 6)})


def test_resize_nearest_on_int64_data_with_axes_and_aspect_policy():
    model = _resize_model(
        [1, 4, 6],
        [1, 6, 9],
        elem=I64,
        sizes=[9, 7],
        axes=[2, 1],
        mode="nearest",
        keep_aspect_ratio_policy="not_larger",
        nearest_mode="round_prefer_ceil",
        coordinate_transformation_mode="asymmetric",
    )
    check(model, {"x": rng.integers(-50, 50, (1, 4, 6)).astype(np.int64)}, use_ort=False)


def test_resize_cubic_antialias_downscale_uses_the_dense_map():
    model = _resize_model(
        [1, 1, 16, 12],
        [1, 1, 4, 5],
        scales=[1, 1, 0.25, 0.45],
        mode="cubic",
        antialias=1,
        cubic_coeff_a=-0.5,
    )
    check(model, {"x": floats(1, 1, 16, 12)}, use_ort=False)


def test_resize_tf_crop_and_resize_with_extrapolation():
    model = _resize_model(
        [1, 1, 4, 4],
        [1, 1, 3, 5],
        sizes=[3, 5],
        axes=[2, 3],
        roi=[0.4, -0.2, 1.3, 0.9],
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=7.5,
    )
    check(model, {"x": floats(1, 1, 4, 4)}, use_ort=False)


def test_resize_refusals():
    both = _resize_model([1, 4], [1, 8], scales=[1, 2], sizes=[1, 8], mode="nearest")
    assert "exactly one of scales and sizes" in refused(both)
    aa = _resize_model([1, 4], [1, 2], scales=[1, 0.5], mode="nearest", antialias=1)
    assert "antialias applies to the linear and cubic modes" in refused(aa)
    ints = _resize_model([1, 4], [1, 8], elem=I64, scales=[1, 2], mode="linear")
    assert "interpolating modes (linear, cubic) need float data" in refused(ints)
    msg = refused(_resize_model([1, 4], [1, 8], scales=[1, 2], mode="area"))
    assert msg.startswith("Resize node '#0': mode 'area' is not supported")


# ----------------------------------------------------------------------------- pad


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_pad_modes(mode):
    pads = np.array([1, 2, 2, 0], dtype=np.int64)  # begins of both axes, then their ends
    model = make(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)],
        [("x", F, [3, 4])],
        [("y", F, [6, 6])],
        [("p", pads)],
    )
    check(model, {"x": floats(3, 4)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_negative_pads_with_axes(mode):
    """Negative pads crop first; the kept range is then padded (onnxruntime's semantics)."""
    model = make(
        [helper.make_node("Pad", ["x", "p", "", "a"], ["y"], mode=mode)],
        [("x", F, [2, 5, 4])],
        [("y", F, [2, 4, 5])],
        [("p", np.array([-2, 2, 1, -1], dtype=np.int64)), ("a", np.array([1, -1], dtype=np.int64))],
    )
    check(model, {"x": floats(2, 5, 4)})


def test_pad_with_a_run_time_constant_value():
    """Pad with zeros, then a static border mask chooses the computed value."""
    model = make(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
            helper.make_node("Pad", ["x", "p", "m"], ["y"]),
        ],
        [("x", F, [2, 3])],
        [("y", F, [3, 5])],
        [("p", np.array([1, 0, 0, 2], dtype=np.int64))],
    )
    check(model, {"x": floats(2, 3)})


def test_pad_refusals():
    model = make(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="mirror")],
        [("x", F, [3])],
        [("y", F, [5])],
        [("p", np.array([1, 1], dtype=np.int64))],
    )
    assert "mode 'mirror' is not supported (one of constant, reflect, edge, wrap)" in refused(model)


# ----------------------------------------------------------------------------- scatters


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_with_run_time_indices(reduction):
    """Duplicate targets combine by the reduction (none: distinct targets only, as ONNX asks)."""
    idx = np.array([[1], [3], [-1]] if reduction == "none" else [[1], [3], [1]], dtype=np.int64)
    model = make(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
        [("x", F, [4, 2, 3]), ("i", I64, [3, 1]), ("u", F, [3, 2, 3])],
        [("y", F, [4, 2, 3])],
    )
    check(model, {"x": floats(4, 2, 3), "i": idx, "u": floats(3, 2, 3)}, use_ort=False)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements_with_run_time_indices(reduction):
    idx = np.array([[0, -1, 2], [2, 0, 0]], dtype=np.int64)
    model = make(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=reduction)],
        [("x", I64, [3, 4]), ("i", I64, [2, 3]), ("u", I64, [2, 3])],
        [("y", I64, [3, 4])],
    )
    feeds = {
        "x": rng.integers(-9, 9, (3, 4)).astype(np.int64),
        "i": idx,
        "u": rng.integers(-9, 9, (2, 3)).astype(np.int64),
    }
    check(model, feeds, use_ort=False)


def test_scatter_elements_with_constant_indices_adds_duplicates():
    model = make(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], reduction="add")],
        [("x", F, [3, 2]), ("u", F, [3, 2])],
        [("y", F, [3, 2])],
        [("i", np.array([[0, 1], [0, 1], [2, -3]], dtype=np.int64))],
    )
    check(model, {"x": floats(3, 2), "u": floats(3, 2)})


def test_scatter_refuses_an_oversized_match():
    model = make(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
        [("x", F, [4096, 1024]), ("i", I64, [4096, 1]), ("u", F, [4096, 1024])],
        [("y", F, [4096, 1024])],
    )
    assert "over the limit" in refused(model)


# ----------------------------------------------------------------------------- the rest


def test_one_hot_with_run_time_indices_and_values():
    model = make(
        [helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=1)],
        [("i", I64, [2, 3]), ("v", F, [2])],
        [("y", F, [2, 5, 3])],
        [("d", np.float32(5))],
        opset=11,
    )
    check(model, {"i": np.array([[0, -1, 7], [4, 2, -5]], dtype=np.int64), "v": floats(2)})


def test_eye_like_compress_center_crop_pad():
    nodes = [
        helper.make_node("EyeLike", ["x"], ["e"], k=1, dtype=I64),
        helper.make_node("Compress", ["x", "c"], ["cx"], axis=1),
        helper.make_node("CenterCropPad", ["x", "s"], ["cp"]),
        helper.make_node("Compress", ["x", "c2"], ["cf"]),
    ]
    model = make(
        nodes,
        [("x", F, [3, 4])],
        [("e", I64, [3, 4]), ("cx", F, [3, 2]), ("cp", F, [6, 1]), ("cf", F, [2])],
        [
            ("c", np.array([True, False, False, True])),
            ("s", np.array([6, 1], dtype=np.int64)),
            ("c2", np.array([0, 0, 1, 0, 1], dtype=np.bool_)),
        ],
    )
    check(model, {"x": floats(3, 4)}, use_ort=False)


def test_reverse_sequence_with_run_time_lengths():
    model = make(
        [helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)],
        [("x", F, [3, 4, 2]), ("l", I64, [3])],
        [("y", F, [3, 4, 2])],
    )
    check(model, {"x": floats(3, 4, 2), "l": np.array([4, 1, 2], dtype=np.int64)})


def test_refusals():
    bad_batch = make(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
        [("x", F, [2, 3]), ("i", I64, [3, 1])],
        [("y", F, [3])],
    )
    assert "the batch dims of data [2] and indices [3] differ" in refused(bad_batch)
    runtime_cond = make(
        [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
        [("x", F, [3]), ("c", B, [3])],
        [("y", F, [2])],
    )
    assert "input condition ('c') must be a constant" in refused(runtime_cond)
    runtime_depth = make(
        [helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
        [("i", I64, [2]), ("d", I64, [1])],
        [("y", F, [2, 3])],
        [("v", np.array([0, 1], dtype=np.float32))],
    )
    assert "input depth ('d') must be a constant" in refused(runtime_depth)
    bad_reduction = make(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], reduction="avg")],
        [("x", F, [3]), ("i", I64, [1]), ("u", F, [1])],
        [("y", F, [3])],
    )
    assert "reduction 'avg' is not supported" in refused(bad_reduction)
