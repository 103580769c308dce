"""onnx's bundled "light" whole-network models (opset 9), and variants with random weights.

As shipped, every weight is a ConstantOfShape of one value and the other parameters are graph
inputs, so a network's output is close to constant and comparing it says little. The weighted
variant replaces each ConstantOfShape weight by seeded random values (He-scaled normal for conv
and gemm weights, positive for per-channel parameters) and feeds the other parameters positive values (batch-norm variances and scales stay meaningful), so every
layer's arithmetic shows in the output.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LIGHT_DIR = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
NAMES = sorted(p.stem.removeprefix("light_") for p in LIGHT_DIR.glob("light_*.onnx"))


def path(name: str) -> Path:
    return LIGHT_DIR / f"light_{name}.onnx"


def with_random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy whose ConstantOfShape weights (shape from an initializer) are random initializers."""
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name: i for i in m.graph.initializer}
    keep = []
    for node in m.graph.node:
        shape_init = inits.get(node.input[0]) if node.op_type == "ConstantOfShape" else None
        if shape_init is None:
            keep.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(shape_init)]
        if len(shape) > 1:  # a conv or gemm weight: He-scaled normal
            w = rng.standard_normal(shape) * np.sqrt(2.0 / int(np.prod(shape[1:])))
        else:  # a per-channel parameter (bias, batch-norm scale, mean, variance): positive
            w = rng.uniform(0.5, 1.5, shape)
        w = w.astype(np.float32)
        m.graph.initializer.append(numpy_helper.from_array(w, node.output[0]))
        # IR version 3 (these models) wants every initializer listed as a graph input too
        m.graph.input.append(
            helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, shape)
        )
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


def feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """The image input standard normal; every other float input (parameters) in [0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    out: dict[str, np.ndarray] = {}
    for i, vi in enumerate(x for x in model.graph.input if x.name not in inits):
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if i == 0:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            out[vi.name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return out
