"""Not a unit test: writes the real-model set that `ziggurat bench DIR` reports on (issue 14's
table in the README) into a directory of self-contained .onnx files with seeded random weights.

Run: python tests/bench/real_model_set.py OUT_DIR [--size 224]  then  ziggurat bench OUT_DIR

The set: one export of every vision architecture of the model zoo (tests/data/model_zoo/), the
convolutional ones re-shaped to a 1x3xSIZExSIZE input (their pooling is global, so only the input
changes; the models in FIXED_SIZE keep the 64x64 they were exported for),
and onnx's nine light models (224x224 already) with random weights. The weights and inputs are
those the tests use (tests/support/model_zoo.py, tests/support/light_models.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support import light_models, model_zoo  # noqa: E402

FIXED_SIZE = {
    "timm_deit_tiny": "position embeddings",
    "vit_small": "position embeddings",
    "timm_efficientformerv2_s0": "attention biases",
    "timm_mobilevit_xxs": "patch reshapes",
    "shufflenet_v2_x0_5": "the channel shuffle's Reshape (torchscript export)",
    "lraspp_mobilenet_v3_large": "the segmentation head's fixed upsampling size",
}
"""Vision models whose exported graph fixes the input size (what fixes it)."""


def zoo_vision_models() -> list[str]:
    """One zoo file per vision architecture (the first exporter's, by name)."""
    chosen: dict[str, str] = {}
    for name in model_zoo.names():
        entry = model_zoo.entry(name)
        shapes = [i.get("shape") for i in entry["inputs"]]
        if entry["source"] == "transformers" or len(shapes) != 1 or len(shapes[0] or []) != 4:
            continue
        chosen.setdefault(entry["model"], name)
    return sorted(chosen.values())


def resized(model: onnx.ModelProto, size: int) -> onnx.ModelProto:
    """`model` with its one image input made 1x3xSIZExSIZE and every inferred shape dropped."""
    (graph_input,) = [
        i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}
    ]
    dims = graph_input.type.tensor_type.shape.dim
    dims[2].dim_value = size
    dims[3].dim_value = size
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in zoo_vision_models():
        model, _ = model_zoo.load(name)
        if model_zoo.entry(name)["model"] not in FIXED_SIZE:
            model = resized(model, args.size)
        onnx.save(model, args.out / f"{name}.onnx")
        print(name)
    for name in light_models.NAMES:
        model = light_models.with_random_weights(onnx.load(light_models.path(name)))
        onnx.save(model, args.out / f"light_{name}.onnx")
        print(f"light_{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
