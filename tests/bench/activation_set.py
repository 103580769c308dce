"""Not a unit test: writes the one-node activations of HISTORY.md's "fuse-elementwise" table as
.onnx files, for `ziggurat bench DIR` (ours against onnxruntime, one run). Each is a chain of
ONNX elementwise ops as exporters write them, over a transformer's MLP width:

    gelu_tanh  GPT-2's GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), 1 x 128 x 3072
    gelu_erf   BERT's GELU, 0.5 x (1 + erf(x / sqrt(2))), 1 x 128 x 3072
    silu_mul   Llama's SiLU(x) times the gate, 1 x 128 x 2816

Run: python tests/bench/activation_set.py OUT_DIR  then  ziggurat bench OUT_DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N = helper.make_node


def _model(
    name: str, nodes: list[onnx.NodeProto], shape: list[int], inputs: list[str], consts: dict
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, shape) for i in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gelu_tanh() -> onnx.ModelProto:
    nodes = [
        N("Pow", ["x", "three"], ["x3"]),
        N("Mul", ["x3", "c"], ["a"]),
        N("Add", ["x", "a"], ["b"]),
        N("Mul", ["b", "s"], ["t"]),
        N("Tanh", ["t"], ["th"]),
        N("Add", ["th", "one"], ["u"]),
        N("Mul", ["x", "half"], ["hx"]),
        N("Mul", ["hx", "u"], ["y"]),
    ]
    consts = {"three": 3.0, "c": 0.044715, "s": np.sqrt(2 / np.pi), "one": 1.0, "half": 0.5}
    return _model("gelu_tanh", nodes, [1, 128, 3072], ["x"], consts)


def gelu_erf() -> onnx.ModelProto:
    nodes = [
        N("Div", ["x", "sq2"], ["d"]),
        N("Erf", ["d"], ["e"]),
        N("Add", ["e", "one"], ["u"]),
        N("Mul", ["x", "u"], ["v"]),
        N("Mul", ["v", "half"], ["y"]),
    ]
    consts = {"sq2": np.sqrt(2.0), "one": 1.0, "half": 0.5}
    return _model("gelu_erf", nodes, [1, 128, 3072], ["x"], consts)


def silu_mul() -> onnx.ModelProto:
    nodes = [
        N("Sigmoid", ["x"], ["s"]),
        N("Mul", ["x", "s"], ["xs"]),
        N("Mul", ["xs", "g"], ["y"]),
    ]
    return _model("silu_mul", nodes, [1, 128, 2816], ["x", "g"], {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, make in {"gelu_tanh": gelu_tanh, "gelu_erf": gelu_erf, "silu_mul": silu_mul}.items():
        model = make()
        onnx.checker.check_model(model)
        onnx.save(model, args.out / f"{name}.onnx")
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
