"""NonMaxSuppression (compiler/frontend/ops/non_max_suppression.py): compiled, run on clustered
(overlapping) boxes with tied scores, and compared with onnx's reference implementation (which
generated the node tests) and onnxruntime, including the trimmed and the empty selections; the
attribute-like inputs must be constants, and the box count is bounded."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.frontend.ops.non_max_suppression import MAX_BOXES
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def nms_model(b, c, n, max_output=None, iou=None, score=None, center=0):
    """boxes [b, n, 4], scores [b, c, n]; the given thresholds as initializers."""
    inputs, inits = ["boxes", "scores"], []
    for name, value, dtype in (
        ("max_output", max_output, np.int64),
        ("iou", iou, np.float32),
        ("score", score, np.float32),
    ):
        inputs.append(name if value is not None else "")
        if value is not None:
            inits.append((name, np.array([value], dtype)))
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("NonMaxSuppression", inputs, ["selected"], center_point_box=center)
    return graph_model(
        [node],
        [("boxes", F, [b, n, 4]), ("scores", F, [b, c, n])],
        [("selected", I64)],
        inits,
        opset=11,
    )


def clustered(rng, b, n, center):
    """Boxes jittered around three per batch, so many overlap: corners in either order, or
    centers and sizes (some negative)."""
    base = rng.uniform(0, 4, (b, 3, 4))
    if center:
        base[..., 2:] = rng.uniform(1, 3, (b, 3, 2))
    pick = rng.integers(0, 3, (b, n))
    boxes = np.take_along_axis(base, pick[..., None], 1) + rng.normal(0, 0.3, (b, n, 4))
    return boxes.astype(np.float32)


def reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize(
    "b, c, n, max_output, iou, score, center",
    [(2, 3, 10, 3, 0.3, 0.35, 0), (1, 2, 12, 100, 0.5, None, 1)],
)
def test_nms_matches_reference_and_onnxruntime(b, c, n, max_output, iou, score, center):
    model = nms_model(b, c, n, max_output, iou, score, center)
    compiled = compile_model(model)
    rng = np.random.default_rng(5)
    lengths = set()
    for _ in range(4):
        feeds = {
            "boxes": clustered(rng, b, n, center),
            # few distinct scores: ties are broken by the box index
            "scores": rng.choice(np.float32([0.1, 0.3, 0.5, 0.7, 0.9]), (b, c, n)),
        }
        ours = compiled.run(feeds)["selected"]
        expected = reference(model, feeds)
        np.testing.assert_array_equal(onnxruntime_run(model, feeds)[0], expected)
        assert ours.shape == expected.shape and ours.dtype == np.int64
        np.testing.assert_array_equal(ours, expected)
        lengths.add(len(ours))
    assert len(lengths) > 1  # the trimmed length follows the data
    assert max(lengths) <= b * c * min(n, max_output)
    assert min(lengths) < b * c * min(n, max_output)  # something was suppressed


def test_empty_selections():
    model = nms_model(1, 2, 5, max_output=3, iou=0.5, score=0.5)
    compiled = compile_model(model)
    boxes = np.tile(np.float32([0, 0, 1, 1]), (1, 5, 1))
    scores = np.full((1, 2, 5), 0.5, np.float32)  # none above the threshold
    assert compiled.run({"boxes": boxes, "scores": scores})["selected"].shape == (0, 3)
    scores[0, 1, 3] = 0.75  # identical boxes: the best one suppresses the rest
    np.testing.assert_array_equal(
        compiled.run({"boxes": boxes, "scores": scores})["selected"], [[0, 1, 3]]
    )
    feeds = {"boxes": boxes, "scores": scores}
    for model in (nms_model(1, 2, 5, max_output=0), nms_model(1, 2, 5)):  # selects nothing
        assert compile_model(model).run(feeds)["selected"].shape == (0, 3)


def test_thresholds_must_be_constants():
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "m", "iou"], ["s"])
    model = graph_model(
        [node],
        [("boxes", F, [1, 4, 4]), ("scores", F, [1, 1, 4]), ("iou", F, [1])],
        [("s", I64)],
        [("m", np.array([2], np.int64))],
        opset=11,
    )
    with pytest.raises(FrontendError, match=r"input iou_threshold \('iou'\) must be a constant"):
        import_onnx(model)


def test_limits_and_bad_inputs_are_refused():
    n = MAX_BOXES + 1
    with pytest.raises(FrontendError, match=rf"{n} boxes per batch.*at most {MAX_BOXES}"):
        import_onnx(nms_model(1, 1, n, max_output=10))
    with pytest.raises(FrontendError, match=r"center_point_box must be 0 or 1, got 2"):
        import_onnx(nms_model(1, 1, 4, max_output=1, center=2))
    model = nms_model(1, 1, 4, max_output=1)
    model.graph.input[1].type.tensor_type.shape.dim[2].dim_value = 5
    with pytest.raises(
        FrontendError, match=r"scores must have shape .* = \[1, C, 4\], got \[1, 1, 5\]"
    ):
        import_onnx(model)


def test_reading_the_selection_is_refused():
    model = nms_model(1, 1, 4, max_output=2)
    model.graph.node.append(helper.make_node("Neg", ["selected"], ["y"], name="negate"))
    model.graph.output[0].name = "y"
    with pytest.raises(FrontendError, match=r"Neg node 'negate'.*'selected' has a data-depend"):
        import_onnx(model)
