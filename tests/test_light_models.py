"""onnx's nine bundled "light" whole-network models (opset 9: upgraded to opset 13 by onnx's
version converter on import) compile and match onnxruntime, as shipped and with random weights.

As shipped their weights are constants, so the output says little; the weighted variant
(tests/support/light_models.py) makes every layer count, and is what CI runs, for six of the nine
(about 1.5 min on 2 cores); `ZIGGURAT_FULL_ZOO=1` runs all nine, and as shipped too. The three
left to the full run are the slowest to compile and add no operator or pattern of their own:
DenseNet-121 (concatenation chains: SqueezeNet and Inception-v1 have them), Inception-v2
(Inception-v1's modules with batch norm, which ResNet-50 has) and VGG-19 (plain 3x3 convolutions,
as ZFNet and AlexNet).
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.model import compile_model
from tests.support import light_models
from tests.support.references import onnxruntime_run as _reference

pytestmark = pytest.mark.skipif(
    len(light_models.NAMES) != 9, reason=f"onnx ships no light models in {light_models.LIGHT_DIR}"
)


def _assert_matches(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ours = list(compile_model(model).run(feeds).values())
    refs = _reference(model, feeds)
    assert len(ours) == len(refs)
    for o, r in zip(ours, refs, strict=True):
        assert o.shape == r.shape
        assert np.all(np.isfinite(r)), "the reference is not finite: the inputs are wrong"
        scale = float(np.max(np.abs(r)))
        assert float(np.max(np.abs(o - r))) <= 1e-4 * scale, (float(np.max(np.abs(o - r))), scale)


def test_the_nine_light_models_are_opset_9():
    for name in light_models.NAMES:
        model = onnx.load(light_models.path(name))
        assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [9]


FULL = os.environ.get("ZIGGURAT_FULL_ZOO") == "1"


@pytest.mark.skipif(
    not FULL,
    reason="as shipped, the weights differ from the random-weights run only in value (the same "
    "graph, the same kernels) and the output says little; ZIGGURAT_FULL_ZOO=1 runs it",
)
@pytest.mark.parametrize("name", light_models.NAMES)
def test_light_model_as_shipped_matches_onnxruntime(name: str):
    model = onnx.load(light_models.path(name))
    _assert_matches(model, zoo.random_inputs(model))


SLOW = ("densenet121", "inception_v2", "vgg19")


@pytest.mark.parametrize("name", light_models.NAMES)
def test_light_model_with_random_weights_matches_onnxruntime(name: str):
    if name in SLOW and not FULL:
        pytest.skip(f"{name} is one of the three slowest light models; ZIGGURAT_FULL_ZOO=1 runs it")
    model = light_models.with_random_weights(onnx.load(light_models.path(name)))
    feeds = light_models.feeds(model)
    ref = _reference(model, feeds)[0]
    assert float(np.std(ref)) > 1e-4, "random weights should make the output vary"
    _assert_matches(model, feeds)
