"""Built-in models, made with onnx.helper and random weights (nothing is downloaded).

Used by `ziggurat demo`, the whole-model tests and the benchmarks. Each builder is deterministic
for a seed so failures reproduce.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class _Graph:
    """A tiny helper that names nodes and keeps initializers next to them."""

    def __init__(self, seed: int, gain: float = 2.0):
        self.gain = (
            gain  # weight variance * fan_in; below 2 keeps deep residual stacks near unit scale
        )
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, array: np.ndarray, prefix: str = "w") -> str:
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def weight(self, *shape: int, scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        s = scale if scale is not None else (self.gain / max(fan_in, 1)) ** 0.5
        return self.const((self.rng.standard_normal(shape) * s).astype(np.float32))

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        """Append a one-output node; its output is named like the node."""
        name = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        k: int,
        stride: int = 1,
        bias: bool = True,
        group: int = 1,
    ) -> str:
        ins = [x, self.weight(cout, cin // group, k, k)]
        if bias:
            ins.append(self.const((self.rng.standard_normal(cout) * 0.1).astype(np.float32), "b"))
        return self.op(
            "Conv",
            ins,
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[k // 2] * 4,
            group=group,
        )

    def batchnorm(self, x: str, c: int) -> str:
        r = self.rng
        scale = self.const((1.0 + 0.1 * r.standard_normal(c)).astype(np.float32), "bn_scale")
        bias = self.const((0.1 * r.standard_normal(c)).astype(np.float32), "bn_bias")
        mean = self.const((0.1 * r.standard_normal(c)).astype(np.float32), "bn_mean")
        var = self.const((1.0 + 0.1 * r.random(c)).astype(np.float32), "bn_var")
        return self.op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def model(
        self,
        name: str,
        inputs: list[tuple[str, list[int]]],
        outputs: list[tuple[str, str]],
        opset: int = OPSET,
    ) -> onnx.ModelProto:
        for src, dst in outputs:  # rename the last tensors to the public output names
            for node in self.nodes:
                node.output[:] = [dst if o == src else o for o in node.output]
                node.input[:] = [dst if i == src else i for i in node.input]
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(dst, TensorProto.FLOAT, None) for _, dst in outputs],
            self.inits,
        )
        m = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ziggurat.zoo"
        )
        m.ir_version = 9
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        onnx.checker.check_model(m)
        return m


def matmul(n: int = 64) -> onnx.ModelProto:
    """One n x n x n MatMul of two graph inputs `a` and `b` (output `y`): the smallest tunable
    model, for tests of the tuner and its database."""
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "matmul",
        [vi("a", TensorProto.FLOAT, [n, n]), vi("b", TensorProto.FLOAT, [n, n])],
        [vi("y", TensorProto.FLOAT, [n, n])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def mlp(
    seed: int = 0, batch: int = 4, sizes: tuple[int, ...] = (64, 128, 128, 10)
) -> onnx.ModelProto:
    g = _Graph(seed)
    x = "input"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        x = g.op(
            "Gemm", [x, g.weight(b, a), g.const(np.zeros(b, np.float32) + 0.01, "b")], transB=1
        )
        if i < len(sizes) - 2:
            x = g.op("Relu", [x])
    x = g.op("Softmax", [x], axis=-1)
    return g.model("mlp", [("input", [batch, sizes[0]])], [(x, "output")])


def small_cnn(seed: int = 0) -> onnx.ModelProto:
    """The demo model: conv-bn-relu, a residual block, pooling and a classifier."""
    g = _Graph(seed)
    x = g.op("Relu", [g.batchnorm(g.conv("input", 3, 16, 3), 16)])
    y = g.op("Relu", [g.batchnorm(g.conv(x, 16, 16, 3, bias=False), 16)])
    y = g.batchnorm(g.conv(y, 16, 16, 3, bias=False), 16)
    x = g.op("Relu", [g.op("Add", [x, y])])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    x = g.op("Gemm", [x, g.weight(10, 16), g.const(np.zeros(10, np.float32), "b")], transB=1)
    return g.model("small_cnn", [("input", [1, 3, 32, 32])], [(x, "output")])


def transformer_block(
    seed: int = 0, seq: int = 16, dim: int = 64, heads: int = 4
) -> onnx.ModelProto:
    """One pre-norm encoder block: layer norm, multi-head self-attention, GELU MLP, residuals."""
    g = _Graph(seed)
    hd = dim // heads

    def ln(x: str) -> str:
        return g.op(
            "LayerNormalization",
            [
                x,
                g.const(
                    np.ones(dim, np.float32) + 0.05 * g.rng.standard_normal(dim).astype(np.float32)
                ),
                g.const(np.zeros(dim, np.float32)),
            ],
            axis=-1,
            epsilon=1e-5,
        )

    def heads_of(x: str) -> str:
        r = g.op("Reshape", [x, g.const(np.array([seq, heads, hd], np.int64), "shape")])
        return g.op("Transpose", [r], perm=[1, 0, 2])

    h = ln("input")
    q = heads_of(g.op("MatMul", [h, g.weight(dim, dim)]))
    k = heads_of(g.op("MatMul", [h, g.weight(dim, dim)]))
    v = heads_of(g.op("MatMul", [h, g.weight(dim, dim)]))
    kt = g.op("Transpose", [k], perm=[0, 2, 1])
    s = g.op(
        "Mul", [g.op("MatMul", [q, kt]), g.const(np.array(1.0 / np.sqrt(hd), np.float32), "scale")]
    )
    p = g.op("Softmax", [s], axis=-1)
    o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[1, 0, 2])
    o = g.op("Reshape", [o, g.const(np.array([seq, dim], np.int64), "shape")])
    x = g.op("Add", ["input", g.op("MatMul", [o, g.weight(dim, dim)])])
    h = ln(x)
    m = g.op(
        "Add",
        [g.op("MatMul", [h, g.weight(dim, 4 * dim)]), g.const(np.zeros(4 * dim, np.float32), "b")],
    )
    m = g.op("Gelu", [m], domain="")
    m = g.op("MatMul", [m, g.weight(4 * dim, dim)])
    x = g.op("Add", [x, m])
    return g.model("transformer_block", [("input", [seq, dim])], [(x, "output")], opset=20)


def resnet18(
    seed: int = 0, batch: int = 1, size: int = 224, classes: int = 1000
) -> onnx.ModelProto:
    """ResNet-18's shape (He et al. 2016) with random weights and batch-norm statistics.

    The weight gain is chosen so activations stay O(1) through the residual stack, as trained
    batch-norm keeps them, so output comparisons test the arithmetic and not fp32 cancellation.
    """
    g = _Graph(seed, gain=0.6)
    x = g.op("Relu", [g.batchnorm(g.conv("input", 3, 64, 7, 2, bias=False), 64)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = g.op("Relu", [g.batchnorm(g.conv(x, cin, cout, 3, stride, bias=False), cout)])
            y = g.batchnorm(g.conv(y, cout, cout, 3, bias=False), cout)
            if stride != 1 or cin != cout:
                x = g.batchnorm(g.conv(x, cin, cout, 1, stride, bias=False), cout)
            x = g.op("Relu", [g.op("Add", [x, y])])
            cin = cout
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    x = g.op(
        "Gemm", [x, g.weight(classes, 512), g.const(np.zeros(classes, np.float32), "b")], transB=1
    )
    return g.model("resnet18", [("input", [batch, 3, size, size])], [(x, "output")])


MODELS: dict[str, Callable[..., onnx.ModelProto]] = {
    "mlp": mlp,
    "small-cnn": small_cnn,
    "transformer-block": transformer_block,
    "resnet18": resnet18,
}


def builtin(name: str) -> onnx.ModelProto:
    """The built-in model `name` (what `zoo:NAME` names on the command line); KeyError with the
    list of names for an unknown one."""
    if name not in MODELS:
        raise KeyError(f"unknown built-in model '{name}' (available: {', '.join(MODELS)})")
    return MODELS[name]()


def model_from_arg(arg: str) -> onnx.ModelProto | str:
    """A command-line model argument: `zoo:NAME` is a built-in model, anything else a path."""
    return builtin(arg[4:]) if arg.startswith("zoo:") else arg


def random_inputs(
    model: onnx.ModelProto, seed: int = 0, shapes: dict[str, list[int]] | None = None
) -> dict[str, np.ndarray]:
    """Random inputs for `model`: standard normal floats (of the declared float type); integers
    in {0, 1} and random bools, valid as token ids (any vocabulary), attention masks and indices
    alike. `shapes` gives the shape of inputs with symbolic dims."""
    rng = np.random.default_rng(seed)
    init = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = (shapes or {}).get(vi.name) or [d.dim_value for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type) if tt.elem_type else np.float32
        if tt.elem_type == onnx.TensorProto.BOOL:
            feeds[vi.name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds
