"""The GPU kernels of common operators, run for real on OpenCL (PoCL on this CPU) against
onnxruntime, with both kinds of schedule: CPU-shaped (opencl-cpu: wide vectors, one work-item per
register tile) and SIMT-shaped (opencl-gpu: hundreds of threads per block, operands staged in
workgroup memory between barriers; the schedules CUDA gets, printed as OpenCL C).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.backends.gpu.opencl_runtime import opencl_available
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

pytestmark = pytest.mark.skipif(
    opencl_available() is not None, reason=f"OpenCL: {opencl_available()}"
)
F = TensorProto.FLOAT
PRESETS = ["opencl-cpu", "opencl-gpu"]


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)


def check(model, feeds: dict[str, np.ndarray], preset: str) -> None:
    compiled = compile_model(model, target="opencl", preset=preset)
    ours = list(compiled.run(feeds).values())
    refs = onnxruntime_run(model, feeds)
    assert len(ours) == len(refs)
    for o, r in zip(ours, refs, strict=True):
        assert o.shape == r.shape
        scale = max(float(np.max(np.abs(r))), 1.0)
        assert float(np.max(np.abs(o - r))) <= 1e-4 * scale


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("m", "k", "n"), [(64, 128, 64), (49, 96, 10), (1, 256, 1000), (33, 7, 5)])
def test_matmul(preset: str, m: int, k: int, n: int) -> None:
    model = graph_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [("a", F, [m, k])],
        [("y", F)],
        [("b", rand(k, n, seed=1))],
    )
    check(model, {"a": rand(m, k)}, preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_gemm_bias_relu(preset: str) -> None:
    model = graph_model(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
            helper.make_node("Relu", ["g"], ["y"]),
        ],
        [("x", F, [8, 96])],
        [("y", F)],
        [("w", rand(40, 96, seed=2)), ("b", rand(40, seed=3))],
    )
    check(model, {"x": rand(8, 96)}, preset)


CONVS = {
    "3x3": dict(c=16, k=32, hw=14, kernel=3, stride=1, pad=1, group=1),
    "strided": dict(c=8, k=16, hw=15, kernel=3, stride=2, pad=1, group=1),
    "depthwise": dict(c=24, k=24, hw=14, kernel=3, stride=1, pad=1, group=24),
    "pointwise": dict(c=32, k=64, hw=7, kernel=1, stride=1, pad=0, group=1),
    "stem": dict(c=3, k=16, hw=32, kernel=7, stride=2, pad=3, group=1),
}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("conv", list(CONVS))
def test_conv_bias_relu(preset: str, conv: str) -> None:
    p = CONVS[conv]
    c, k, hw, kk, g = p["c"], p["k"], p["hw"], p["kernel"], p["group"]
    model = graph_model(
        [
            helper.make_node(
                "Conv",
                ["x", "w", "b"],
                ["c"],
                kernel_shape=[kk, kk],
                strides=[p["stride"]] * 2,
                pads=[p["pad"]] * 4,
                group=g,
            ),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [("x", F, [1, c, hw, hw])],
        [("y", F)],
        [("w", rand(k, c // g, kk, kk, seed=4) * 0.3), ("b", rand(k, seed=5))],
    )
    check(model, {"x": rand(1, c, hw, hw)}, preset)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "GlobalAveragePool"])
def test_pooling(preset: str, op: str) -> None:
    attrs = (
        {}
        if op == "GlobalAveragePool"
        else dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    )
    model = graph_model(
        [helper.make_node(op, ["x"], ["y"], **attrs)], [("x", F, [1, 16, 15, 15])], [("y", F)]
    )
    check(model, {"x": rand(1, 16, 15, 15)}, preset)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("shape", [(4, 10), (2, 8, 197)])
def test_softmax(preset: str, shape: tuple[int, ...]) -> None:
    model = graph_model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", F, list(shape))], [("y", F)]
    )
    check(model, {"x": rand(*shape) * 3}, preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_layer_norm(preset: str) -> None:
    model = graph_model(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [("x", F, [16, 384])],
        [("y", F)],
        [("s", rand(384, seed=6)), ("b", rand(384, seed=7))],
    )
    check(model, {"x": rand(16, 384)}, preset)
