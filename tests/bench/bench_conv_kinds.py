"""Not a unit test: the convolution kinds of mobile networks, untuned, against onnxruntime.

Run: python tests/bench/bench_conv_kinds.py [--zoo] [--seconds 1.0] [--json]

Single-operator models (batch 1, random weights) of the kinds that separate MobileNet,
EfficientNet and ShuffleNet from ResNet: depthwise 3x3 and 5x5 (stride 1 and 2), pointwise
1x1 and grouped 3x3 convolutions; each compiled with the default schedules and timed against
onnxruntime (one thread, spinning off) in the same run, in alternating rounds. Prints each
latency and the ratio ziggurat / onnxruntime (< 1: ziggurat faster). `--zoo` adds six CNNs of
the model-zoo test set (tests/data/model_zoo, their 64x64 test inputs, weights restored as the
tests restore them).
"""

from __future__ import annotations

import argparse
import json
import sys

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler.benchmark import bench_model  # noqa: E402

# name: (in channels, out channels, height = width, kernel, stride, groups)
CONVS = {
    "depthwise 3x3 144ch 56x56": (144, 144, 56, 3, 1, 144),
    "depthwise 3x3/2 96ch 112x112": (96, 96, 112, 3, 2, 96),
    "depthwise 3x3 960ch 7x7": (960, 960, 7, 3, 1, 960),
    "depthwise 5x5 240ch 28x28": (240, 240, 28, 5, 1, 240),
    "pointwise 24->144 56x56": (24, 144, 56, 1, 1, 1),
    "pointwise 960->160 7x7": (960, 160, 7, 1, 1, 1),
    "grouped 3x3 64ch g4 28x28": (64, 64, 28, 3, 1, 4),
}
ZOO = (
    "mobilenet_v2_dynamo18",
    "efficientnet_b0_dynamo18",
    "shufflenet_v2_x0_5_ts17",
    "squeezenet1_1_dynamo20",
    "mnasnet0_5_ts17",
    "resnet18_dynamo18",
)


def conv_model(c_in: int, c_out: int, hw: int, k: int, s: int, groups: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c_out, c_in // groups, k, k)) * 0.1).astype(np.float32)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], strides=[s, s], pads=[k // 2] * 4, group=groups
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", action="store_true", help="also six CNNs of the model-zoo test set")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cases = [(name, conv_model(*shape)) for name, shape in CONVS.items()]
    if args.zoo:
        from tests.support import model_zoo

        cases += [(name, model_zoo.load(name)[0]) for name in ZOO]
    print(f"# {bench_env.cpu_description()}, one thread", file=sys.stderr)
    for name, model in cases:
        r = bench_model(model, 1, args.seconds)
        row = {
            "case": name,
            "ziggurat_ms": r["ziggurat_ms"],
            "onnxruntime_ms": r["onnxruntime_ms"],
            "ratio": r["ratio"],
            "max_abs_err": r["max_abs_err"],
        }
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(
                f"{name:<32}{r['ziggurat_ms']:>10.3f} ms{r['onnxruntime_ms']:>10.3f} ms"
                f"{r['ratio']:>8.2f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
