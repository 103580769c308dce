"""The model-zoo test set: torchvision, timm and Hugging Face transformers models exported to ONNX
without their weights (tests/data/model_zoo/, written by tests/support/export_model_zoo.py), and
their restoration with deterministic random weights and inputs. Nothing is downloaded; torch is
not needed.

The files keep every integer initializer and every float initializer of at most 64 elements as
exported; larger float initializers are stored as a TensorProto with the name, data type and dims
but no data, marked by `doc_string == STRIPPED_MARK`. `load(name)` fills those with values drawn
from a generator seeded by the model's name, scaled so that activations stay O(1):

- weights: uniform(-1, 1) * sqrt(3 / fan_in) (unit variance out for unit variance in; He's
  sqrt(6 / fan_in) made the deeper residual networks grow to 1e4 as their batch norms are folded
  into the convolutions by the exporters), fan_in taken from the consumer's layout (Conv:
  in_channels/group * kh * kw, MatMul: rows, Gemm: by transB, otherwise the product of all dims
  but the first);
- embedding tables (Gather's data): uniform(-1, 1);
- parameters that must be positive or are scales: batch-norm scales and variances, norm scales,
  anything feeding Sqrt/Log/Reciprocal/Pow's base or a Div's divisor, and Mul's operands:
  uniform(0.5, 1.5); shifts (norm biases and means, Add/Sub operands, Conv/Gemm biases):
  uniform(-0.5, 0.5).

`manifest.json` records each model's inputs: float inputs are drawn standard normal, integer
inputs uniformly in their `range` [low, high) (token ids below the vocabulary size; attention
masks in {0, 1}, with the first position always 1 so that no row is fully masked).
"""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

ZOO_DIR = Path(__file__).resolve().parents[1] / "data" / "model_zoo"
MANIFEST = ZOO_DIR / "manifest.json"
STRIPPED_MARK = "ziggurat-model-zoo: stripped (random weights restored on load)"

WEIGHT = "weight"
POSITIVE = "positive"
SHIFT = "shift"
EMBEDDING = "embedding"


@cache
def manifest() -> dict[str, Any]:
    return json.loads(MANIFEST.read_text())


def names() -> list[str]:
    return sorted(manifest()["models"])


def entry(name: str) -> dict[str, Any]:
    return manifest()["models"][name]


def path(name: str) -> Path:
    return ZOO_DIR / entry(name)["file"]


def seed_of(name: str, salt: int = 0) -> int:
    return zlib.crc32(name.encode()) + salt


def is_stripped(t: onnx.TensorProto) -> bool:
    return t.doc_string == STRIPPED_MARK


def _uses(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    uses: dict[str, list[tuple[onnx.NodeProto, int]]] = defaultdict(list)
    for node in graph.node:
        for i, name in enumerate(node.input):
            uses[name].append((node, i))
    return uses


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _kind(dims: list[int], uses: list[tuple[onnx.NodeProto, int]]) -> tuple[str, int]:
    """(kind, fan_in) for a stripped tensor of shape `dims` read by `uses` (its first use
    that says something decides)."""
    rest = int(np.prod(dims[1:])) if len(dims) > 1 else 1
    for node, i in uses:
        op = node.op_type
        if op == "BatchNormalization":
            return (POSITIVE, 0) if i in (1, 4) else (SHIFT, 0)
        if op in ("LayerNormalization", "InstanceNormalization", "GroupNormalization"):
            return (POSITIVE, 0) if i == 1 else (SHIFT, 0)
        if op in ("Sqrt", "Log", "Reciprocal") or (op == "Pow" and i == 0):
            return POSITIVE, 0
        if op == "Div" and i == 1:
            return POSITIVE, 0
        if op in ("Conv", "ConvTranspose"):
            if i == 1:
                if op == "Conv":
                    return WEIGHT, rest
                return WEIGHT, dims[0] // _attr(node, "group", 1) * int(np.prod(dims[2:]))
            return SHIFT, 0
        if op == "MatMul" and len(dims) >= 2:
            return WEIGHT, dims[-2] if i == 1 else dims[-1]
        if op == "Gemm":
            if i == 2:
                return SHIFT, 0
            trans = _attr(node, "transB" if i == 1 else "transA", 0)
            fan = (dims[1] if trans else dims[0]) if i == 1 else (dims[0] if trans else dims[1])
            return WEIGHT, fan
        if op == "Gather" and i == 0:
            return EMBEDDING, 0
        if op == "Mul":
            return POSITIVE, 0
        if op in ("Add", "Sub"):
            return SHIFT, 0
    if len(dims) >= 2:
        return WEIGHT, rest
    return SHIFT, 0


def restore_weights(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """A copy of `model` whose stripped initializers hold seeded random values (see the module
    docstring for the distributions)."""
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    uses = _uses(m.graph)
    for init in m.graph.initializer:
        if not is_stripped(init):
            continue
        dims = [int(d) for d in init.dims]
        kind, fan = _kind(dims, uses.get(init.name, []))
        u = rng.uniform(-1.0, 1.0, dims)
        if kind == POSITIVE:
            v = 1.0 + 0.5 * u
        elif kind == SHIFT:
            v = 0.5 * u
        elif kind == EMBEDDING:
            v = u
        else:
            v = u * np.sqrt(3.0 / max(fan, 1))
        dtype = helper.tensor_dtype_to_np_dtype(init.data_type)
        init.CopyFrom(numpy_helper.from_array(v.astype(dtype), init.name))
    return m


def feeds(name: str) -> dict[str, np.ndarray]:
    """Deterministic inputs for the model, from the manifest."""
    rng = np.random.default_rng(seed_of(name, 1))
    out: dict[str, np.ndarray] = {}
    for spec in entry(name)["inputs"]:
        shape, dtype = spec["shape"], np.dtype(spec["dtype"])
        if "range" in spec:
            low, high = spec["range"]
            a = rng.integers(low, high, shape).astype(dtype)
            if "mask" in spec["name"]:
                a[..., 0] = 1
        else:
            a = rng.standard_normal(shape).astype(dtype)
        out[spec["name"]] = a
    return out


def input_shapes(name: str) -> dict[str, list[int]]:
    return {spec["name"]: list(spec["shape"]) for spec in entry(name)["inputs"]}


def load(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The zoo model `name` (a key of the manifest) with random weights, and inputs for it."""
    model = restore_weights(onnx.load(path(name)), seed_of(name))
    return model, feeds(name)
