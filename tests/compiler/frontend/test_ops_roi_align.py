"""RoiAlign composed in the frontend (compiler/frontend/ops/roi_align.py): compiled end to end
and compared with onnx's reference evaluator (which generated the node tests) and onnxruntime
(which agrees with it; it has no RoiAlign-22, so it runs the opset-16 models), on rois inside,
across and far outside the image, tiny, empty and reversed ones, plus the errors of
unsupported attributes and bad inputs. Several nodes share one model, so one compilation
covers many attribute combinations."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32

rng = np.random.default_rng(0)

EDGE_ROIS = [
    [0.0, 0.0, 12.0, 10.0],  # the whole image (spatial_scale 0.5)
    [-30.0, -20.0, 200.0, 150.0],  # far beyond it: many adaptive samples, most outside
    [3.0, 3.0, 3.5, 3.2],  # smaller than a pixel
    [5.0, 5.0, 5.0, 5.0],  # empty
    [10.0, 8.0, 2.0, 1.0],  # reversed
    [-8.0, -8.0, -2.0, -3.0],  # entirely above and left of the image
    [13.0, 11.0, 30.0, 40.0],  # from the bottom-right corner outwards
    [1.3, 2.7, 9.1, 6.4],
    [1.0, -0.7, 2.0, -0.3],  # a sample row in [-1, 0): its weight-0 taps reach pixel row 1
]


def rois_and_batches(n: int, extra: int) -> tuple[np.ndarray, np.ndarray]:
    """EDGE_ROIS and `extra` random ones (x1 <= x2, y1 <= y2), with random batch indices."""
    p = rng.uniform(-4.0, 18.0, (extra, 4)).astype(np.float32)
    rand = np.concatenate([np.minimum(p[:, :2], p[:, 2:]), np.maximum(p[:, :2], p[:, 2:])], 1)
    rois = np.concatenate([np.asarray(EDGE_ROIS, np.float32), rand]).astype(np.float32)
    return rois, rng.integers(0, n, len(rois)).astype(np.int64)


def roi_model(
    configs: list[dict], x_shape: list[int], num_rois: int, opset: int, inputs: int = 1
) -> onnx.ModelProto:
    """One RoiAlign node per attribute dict (`x` picks the input X0, X1, ...), outputs Y0, Y1..."""
    nodes = [
        helper.make_node(
            "RoiAlign",
            [f"X{a.get('x', 0)}", "rois", "b"],
            [f"Y{i}"],
            **{k: v for k, v in a.items() if k != "x"},
        )
        for i, a in enumerate(configs)
    ]
    ins = [(f"X{i}", F, x_shape) for i in range(inputs)]
    ins += [("rois", F, [num_rois, 4]), ("b", I64, [num_rois])]
    return graph_model(nodes, ins, [(f"Y{i}", F) for i in range(len(configs))], opset=opset)


def check(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    ref_model: onnx.ModelProto | None = None,
    ort: bool = False,
    optimize: bool = False,
) -> None:
    """Ours against the reference evaluator of `ref_model` (default: `model`), and the
    reference against onnxruntime (`ort`). Unoptimized (no fusion: faster to compile) unless
    `optimize`."""
    ours = compile_model(model, optimize=optimize).run(feeds)
    refs = ReferenceEvaluator(ref_model or model).run(None, feeds)
    if ort:
        for r, o in zip(refs, onnxruntime_run(model, feeds), strict=True):
            np.testing.assert_allclose(r, o, rtol=1e-5, atol=1e-6)  # the two references agree
    for (name, o), r in zip(ours.items(), refs, strict=True):
        assert o.shape == r.shape, name
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5, err_msg=name)


def test_attribute_combinations_match_reference():
    """avg and max, both coordinate transformations, adaptive and fixed sampling; max mode
    also on an all-negative input, where the reference's zero terms (weight-0 taps, samples
    outside) win over the weighted values."""
    configs = [
        dict(
            mode=mode,
            coordinate_transformation_mode=ctm,
            output_height=3,
            output_width=2,
            sampling_ratio=ratio,
            spatial_scale=0.5,
        )
        for mode, ctm, ratio in [
            ("avg", "half_pixel", 0),  # reversed rois: no samples
            ("avg", "output_half_pixel", 0),  # reversed rois: 1 x 1
            ("avg", "half_pixel", 2),
            ("avg", "output_half_pixel", 2),
            ("max", "half_pixel", 0),
            ("max", "output_half_pixel", 0),
            ("max", "half_pixel", 2),
        ]
    ]
    configs += [
        dict(mode="max", output_height=2, output_width=3, sampling_ratio=ratio, x=1)
        for ratio in (0, 3)
    ]
    rois, b = rois_and_batches(2, 4)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    model = roi_model(configs, [2, 3, 6, 7], len(rois), 22, inputs=2)
    check(model, {"X0": x, "X1": -np.abs(x) - 0.1, "rois": rois, "b": b})


def test_defaults_single_image_match_onnxruntime():
    """Opset 16's defaults (avg, half_pixel, adaptive, 1 x 1 output) and adaptive max with a
    spatial scale, on one image (no per-roi gather), against both references; compiled with
    the graph optimizations (fusion) the other tests skip to compile faster."""
    configs = [
        {},
        dict(mode="max", output_height=2, output_width=3, spatial_scale=2.0),
        dict(output_height=4, output_width=1, sampling_ratio=1, spatial_scale=2.0),
    ]
    rois, b = rois_and_batches(1, 3)
    rois = rois * 0.25
    x = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    check(
        roi_model(configs, [1, 2, 5, 4], len(rois), 16),
        {"X0": x, "rois": rois, "b": b},
        ort=True,
        optimize=True,
    )


def test_opset10_is_output_half_pixel():
    """Opset 10 has no coordinate_transformation_mode: its behaviour is output_half_pixel (as
    onnxruntime does; onnx's reference evaluator applies opset 16's half_pixel default to it),
    here on a single-row input."""
    configs = [dict(output_height=2, output_width=2), dict(mode="max", sampling_ratio=2)]
    rois, b = rois_and_batches(2, 2)
    feeds = {"X0": rng.standard_normal((2, 1, 1, 5)).astype(np.float32), "rois": rois, "b": b}
    model = roi_model(configs, [2, 1, 1, 5], len(rois), 10)
    explicit = [dict(a, coordinate_transformation_mode="output_half_pixel") for a in configs]
    check(model, feeds, ref_model=roi_model(explicit, [2, 1, 1, 5], len(rois), 22))
    for r, o in zip(
        onnxruntime_run(model, feeds),
        ReferenceEvaluator(roi_model(explicit, [2, 1, 1, 5], len(rois), 22)).run(None, feeds),
        strict=True,
    ):
        np.testing.assert_allclose(r, o, rtol=1e-5, atol=1e-6)


def node_model(x_type=F, x_shape=(1, 2, 4, 4), rois_shape=(3, 4), b_type=I64, b_shape=(3,), **a):
    """One RoiAlign node named 'ra' at opset 22."""
    node = helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"], name="ra", **a)
    return graph_model(
        [node],
        [("X", x_type, list(x_shape)), ("rois", F, list(rois_shape)), ("b", b_type, list(b_shape))],
        [("Y", F)],
        opset=22,
    )


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(mode="min"), "mode must be avg or max, got 'min'"),
        (
            dict(coordinate_transformation_mode="align_corners"),
            "coordinate_transformation_mode must be half_pixel or output_half_pixel",
        ),
        (dict(output_height=0), "output_height and output_width must be >= 1"),
        (dict(output_width=-2), "output_height and output_width must be >= 1"),
        (dict(sampling_ratio=-1), "sampling_ratio must be >= 0"),
        (dict(spatial_scale=float("inf")), "spatial_scale must be finite"),
        (dict(x_shape=(2, 4, 4)), "X must be 4-D"),
        (dict(x_type=I64), "X must be float32"),
        (dict(rois_shape=(3, 5)), "rois must have shape [num_rois, 4]"),
        (dict(b_shape=(2,)), "batch_indices must have shape [3]"),
        (dict(b_type=F), "batch_indices must be int64"),
    ],
)
def test_errors(kw, message):
    with pytest.raises(FrontendError, match="RoiAlign node 'ra'") as e:
        import_onnx(node_model(**kw))
    assert message in str(e.value)


def test_coordinate_mode_needs_opset16():
    node = helper.make_node(
        "RoiAlign",
        ["X", "rois", "b"],
        ["Y"],
        name="ra",
        coordinate_transformation_mode="half_pixel",
    )
    model = graph_model(
        [node], [("X", F, [1, 1, 4, 4]), ("rois", F, [1, 4]), ("b", I64, [1])], [("Y", F)], opset=13
    )
    with pytest.raises(FrontendError, match="unknown attribute 'coordinate_transformation_mode'"):
        import_onnx(model)


def test_no_rois_is_empty():
    model = node_model(rois_shape=(0, 4), b_shape=(0,), output_height=2, output_width=3)
    feeds = {
        "X": np.ones((1, 2, 4, 4), np.float32),
        "rois": np.zeros((0, 4), np.float32),
        "b": np.zeros(0, np.int64),
    }
    assert compile_model(model).run(feeds)["Y"].shape == (0, 2, 2, 3)
