"""Not a unit test: writes the one-node row reductions of HISTORY.md's "Vector lanes along a
reduction" table as .onnx files, for `ziggurat bench DIR` (ours against onnxruntime, one run).

    ln768   LayerNormalization over 1 x 128 x 768 (GPT-2's rows)
    ln1024  LayerNormalization over 1 x 128 x 1024
    rms     RMSNorm (Mul, ReduceMean, Add, Sqrt, Div, Mul) over 1 x 128 x 1024 (Llama's)
    sm      Softmax over the last axis of 1 x 8 x 128 x 128 (attention scores)

Run: python tests/bench/reduction_set.py OUT_DIR  then  ziggurat bench OUT_DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(
    name: str, nodes: list[onnx.NodeProto], shape: list[int], consts: dict
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def layer_norm(width: int, rows: int = 128) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)
    consts = {
        "scale": rng.standard_normal(width),
        "bias": rng.standard_normal(width),
    }
    return _model(f"ln{width}", [node], [1, rows, width], consts)


def rms_norm(width: int = 1024, rows: int = 128) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["r"]),
        helper.make_node("Div", ["x", "r"], ["n"]),
        helper.make_node("Mul", ["n", "w"], ["y"]),
    ]
    consts = {"w": np.ones(width), "eps": np.array(1e-6)}
    return _model("rms", nodes, [1, rows, width], consts)


def softmax(heads: int = 8, seq: int = 128) -> onnx.ModelProto:
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
    return _model("sm", [node], [1, heads, seq, seq], {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    models = {
        "ln768": layer_norm(768),
        "ln1024": layer_norm(1024),
        "rms": rms_norm(),
        "sm": softmax(),
    }
    for name, model in models.items():
        onnx.checker.check_model(model)
        onnx.save(model, args.out / f"{name}.onnx")
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
