"""Every supported ONNX operator end to end: a single-node model built with onnx.helper, compiled
to machine code with `compile_model`, compared with onnxruntime (one thread).

A case is (op, attrs, inputs): an input given as a shape is a random float32 runtime input; one
given as an array is an initializer (weights, shapes, axes, pads, indices...). Shapes are odd
(7, 13, 33), broadcast, and attributes cover strides/pads/groups/dilations/ceil_mode/
count_include_pad, transposes, negative axes, negative slice steps and indices, negative pads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.model import compile_model

ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-4, 1e-5
SEED = 20261121


class Case(NamedTuple):
    op: str
    attrs: dict[str, Any]
    inputs: Sequence[tuple[int, ...] | np.ndarray | None]  # None: an omitted optional input
    n_out: int = 1
    opset: int = 18
    positive: bool = False  # inputs in [0.5, 2] (Sqrt, Log, Pow, Reciprocal)


def i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


def f32(*v: float) -> np.ndarray:
    return np.array(v, np.float32)


def scalar(v: float) -> np.ndarray:
    return np.array(v, np.float32)


def const(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(-1, 1, shape).astype(np.float32)


_W = np.random.default_rng(SEED + 1)  # initializer weights

CASES: dict[str, Case] = {
    # -- convolution, matrix products
    "conv_s2_p1_bias": Case(
        "Conv", dict(strides=[2, 2], pads=[1, 1, 1, 1]), [(1, 3, 13, 13), (4, 3, 3, 3), (4,)]
    ),
    "conv_group2_dil2": Case(
        "Conv", dict(group=2, dilations=[2, 2]), [(2, 4, 9, 11), (6, 2, 3, 3)]
    ),
    "conv_depthwise_asym_pads": Case(
        "Conv",
        dict(group=3, pads=[2, 1, 0, 2]),
        [(1, 3, 11, 7), const(_W, 3, 1, 5, 3), const(_W, 3)],
    ),
    "conv_same_upper_s2": Case(
        "Conv", dict(auto_pad="SAME_UPPER", strides=[2, 2]), [(1, 5, 13, 13), const(_W, 7, 5, 3, 3)]
    ),
    "conv_same_lower_s2x3": Case(
        "Conv", dict(auto_pad="SAME_LOWER", strides=[2, 3]), [(1, 2, 7, 13), (3, 2, 2, 4)]
    ),
    "conv_1x1_33ch": Case("Conv", {}, [(1, 33, 7, 7), const(_W, 13, 33, 1, 1), const(_W, 13)]),
    "gemm_bias_vec": Case("Gemm", {}, [(7, 13), (13, 5), (5,)]),
    "gemm_transA": Case("Gemm", dict(transA=1, alpha=0.5), [(13, 7), (13, 5)]),
    "gemm_transB_col_bias": Case("Gemm", dict(transB=1, beta=2.0), [(7, 13), (33, 13), (7, 1)]),
    "gemm_transAB_scalar": Case(
        "Gemm",
        dict(transA=1, transB=1, alpha=1.5, beta=0.5),
        [(13, 7), const(_W, 5, 13), f32(0.25)],
    ),
    "matmul_2d": Case("MatMul", {}, [(7, 13), (13, 33)]),
    "matmul_batch_bcast": Case("MatMul", {}, [(2, 1, 7, 5), (3, 5, 4)]),
    "matmul_1d_lhs": Case("MatMul", {}, [(13,), (2, 13, 7)]),
    "matmul_1d_rhs": Case("MatMul", {}, [(2, 3, 7, 5), (5,)]),
    "matmul_const_rhs": Case("MatMul", {}, [(3, 7, 13), const(_W, 13, 33)]),
    # -- elementwise binary (more random broadcasts below)
    "pow_bcast": Case("Pow", {}, [(7, 13), (13,)], positive=True),
    "pow_const_2": Case("Pow", {}, [(3, 7), f32(2.0)]),
    "pow_const_int": Case("Pow", {}, [(3, 7), np.array(3, np.int64)]),
    # -- elementwise unary
    "sqrt": Case("Sqrt", {}, [(7, 13)], positive=True),
    "exp": Case("Exp", {}, [(3, 33)]),
    "log": Case("Log", {}, [(13, 7)], positive=True),
    "neg": Case("Neg", {}, [(2, 7, 3)]),
    "abs": Case("Abs", {}, [(33,)]),
    "reciprocal": Case("Reciprocal", {}, [(7, 7)], positive=True),
    "relu": Case("Relu", {}, [(2, 13, 7)]),
    "leaky_relu": Case("LeakyRelu", dict(alpha=0.2), [(3, 13, 7)]),
    "leaky_relu_default": Case("LeakyRelu", {}, [(33,)]),
    "sigmoid": Case("Sigmoid", {}, [(7, 13)]),
    "tanh": Case("Tanh", {}, [(13, 7)]),
    "erf": Case("Erf", {}, [(3, 33)]),
    "gelu": Case("Gelu", {}, [(7, 13)], opset=20),
    "gelu_tanh": Case("Gelu", dict(approximate="tanh"), [(7, 13)], opset=20),
    "hard_sigmoid": Case("HardSigmoid", dict(alpha=0.3, beta=0.4), [(13, 7)]),
    "hard_swish": Case("HardSwish", {}, [(2, 33)]),
    "clip_both": Case("Clip", {}, [(7, 13), scalar(-0.5), scalar(0.25)]),
    "clip_min_only": Case("Clip", {}, [(7, 13), scalar(0.1)]),
    "clip_max_only": Case("Clip", {}, [(7, 13), None, scalar(-0.1)]),
    "sum_three_broadcast": Case("Sum", {}, [(3, 7, 13), (13,), (7, 1)]),
    "sum_one": Case("Sum", {}, [(7, 13)]),
    "mean_two": Case("Mean", {}, [(7, 13), (1, 13)]),
    # -- normalization
    "lrn_5": Case("LRN", dict(size=5, alpha=1e-2, beta=0.75, bias=1.5), [(2, 7, 5, 3)]),
    "lrn_defaults": Case("LRN", dict(size=3), [(1, 6, 3, 3)]),  # onnxruntime: odd sizes only
    "softmax_last": Case("Softmax", {}, [(3, 7, 13)]),
    "softmax_axis0": Case("Softmax", dict(axis=0), [(3, 7, 13)]),
    "softmax_axis_neg2": Case("Softmax", dict(axis=-2), [(3, 7, 13)]),
    "softmax_opset11_axis1": Case("Softmax", dict(axis=1), [(3, 7, 5)], opset=11),
    "log_softmax_axis1": Case("LogSoftmax", dict(axis=1), [(3, 33, 7)]),
    "log_softmax_last": Case("LogSoftmax", {}, [(7, 13)]),
    "layer_norm_last": Case("LayerNormalization", {}, [(3, 7, 13), (13,), (13,)]),
    "layer_norm_axis1": Case(
        "LayerNormalization", dict(axis=1, epsilon=1e-3), [(2, 7, 5), const(_W, 7, 5)]
    ),
    "layer_norm_neg2_outputs": Case(
        "LayerNormalization", dict(axis=-2), [(3, 7, 13), (7, 13), (7, 13)], n_out=3
    ),
    "batch_norm": Case(
        "BatchNormalization",
        dict(epsilon=1e-3),
        [(2, 5, 7, 9), const(_W, 5), const(_W, 5), const(_W, 5), np.abs(const(_W, 5)) + 0.5],
    ),
    # -- pooling
    "maxpool_k3_s2_p1_ceil": Case(
        "MaxPool",
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        [(1, 3, 13, 13)],
    ),
    "maxpool_dil2": Case("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2]), [(2, 3, 13, 11)]),
    "maxpool_rect_s12": Case("MaxPool", dict(kernel_shape=[2, 3], strides=[1, 2]), [(1, 4, 7, 13)]),
    "maxpool_same_upper": Case(
        "MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), [(1, 2, 7, 7)]
    ),
    "maxpool_ceil_dil_pads": Case(
        "MaxPool",
        dict(kernel_shape=[2, 2], strides=[3, 3], dilations=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1),
        [(1, 2, 13, 13)],
    ),
    "avgpool_pads_excl": Case(
        "AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), [(1, 3, 7, 7)]
    ),
    "avgpool_pads_incl": Case(
        "AveragePool",
        dict(kernel_shape=[3, 3], pads=[1, 2, 1, 0], count_include_pad=1),
        [(1, 3, 7, 9)],
    ),
    "avgpool_ceil_s2": Case(
        "AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), [(2, 3, 13, 13)]
    ),
    "avgpool_ceil_pads_incl": Case(
        "AveragePool",
        dict(
            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1
        ),
        [(1, 2, 12, 13)],
    ),
    "avgpool_same_lower": Case(
        "AveragePool",
        dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
        [(1, 3, 7, 7)],
    ),
    "global_avgpool": Case("GlobalAveragePool", {}, [(2, 5, 7, 9)]),
    "global_maxpool": Case("GlobalMaxPool", {}, [(2, 5, 13, 7)]),
    # -- data movement
    "reshape_minus1": Case("Reshape", {}, [(2, 3, 7), i64(7, -1)]),
    "reshape_zero": Case("Reshape", {}, [(2, 3, 7), i64(0, -1, 1)]),
    "flatten_axis0": Case("Flatten", dict(axis=0), [(2, 3, 7)]),
    "flatten_axis2": Case("Flatten", dict(axis=2), [(2, 3, 7, 5)]),
    "flatten_neg": Case("Flatten", dict(axis=-1), [(2, 3, 7)]),
    "transpose_perm": Case("Transpose", dict(perm=[2, 0, 1]), [(3, 7, 13)]),
    "transpose_default": Case("Transpose", {}, [(2, 3, 7, 5)]),
    "transpose_4d": Case("Transpose", dict(perm=[0, 2, 3, 1]), [(2, 7, 5, 3)]),
    "concat_neg_axis": Case("Concat", dict(axis=-2), [(2, 3, 7), (2, 5, 7), (2, 1, 7)]),
    "concat_axis0_const": Case("Concat", dict(axis=0), [(3, 13), const(_W, 2, 13)]),
    "split_sizes": Case("Split", dict(axis=1), [(3, 7, 2), i64(2, 5)], n_out=2),
    "split_uneven_num_outputs": Case("Split", dict(axis=-1, num_outputs=3), [(2, 13)], n_out=3),
    "split_equal_default": Case("Split", {}, [(6, 5)], n_out=3, opset=13),
    "slice_neg_step": Case("Slice", {}, [(7, 13), i64(-1), i64(-(2**63)), i64(1), i64(-2)]),
    "slice_neg_axes": Case(
        "Slice", {}, [(3, 7, 13), i64(1, -3), i64(100, 11), i64(-2, -1), i64(1, 3)]
    ),
    "slice_neg_step_mid": Case(
        "Slice", {}, [(13, 5), i64(10, 4), i64(1, -6), i64(0, 1), i64(-3, -1)]
    ),
    "slice_default_axes": Case("Slice", {}, [(7, 13), i64(2, -5), i64(-1, 13)]),
    "squeeze_neg": Case("Squeeze", {}, [(1, 7, 1, 3), i64(-2)]),
    "squeeze_all": Case("Squeeze", {}, [(1, 7, 1, 3)]),
    "unsqueeze_neg": Case("Unsqueeze", {}, [(7, 3), i64(-1, 0)]),
    "gather_neg_idx_axis1": Case("Gather", dict(axis=1), [(3, 7, 5), i64(-1, 0, -7, 3)]),
    "gather_2d_idx": Case("Gather", {}, [(13, 5), np.array([[0, -1], [12, 3], [-13, 7]])]),
    "gather_scalar_idx_neg_axis": Case("Gather", dict(axis=-1), [(3, 7), np.array(-2)]),
    "pad_negative": Case("Pad", {}, [(2, 5, 7, 7), i64(0, -1, 2, 0, 0, 1, -2, 1), scalar(0.5)]),
    "pad_axes": Case("Pad", {}, [(3, 7, 5), i64(1, 2, 3, -1), None, i64(-1, 0)]),
    "pad_2d": Case("Pad", {}, [(7, 13), i64(1, 0, 2, 3)]),
    # -- reductions
    "reduce_mean_axis1": Case("ReduceMean", {}, [(3, 7, 13), i64(1)]),
    "reduce_mean_neg_nokeep": Case("ReduceMean", dict(keepdims=0), [(3, 7, 13), i64(-1, 0)]),
    "reduce_mean_all": Case("ReduceMean", {}, [(7, 13)]),
    "reduce_sum_axis0": Case("ReduceSum", {}, [(13, 7), i64(0)]),
    "reduce_sum_neg_nokeep": Case("ReduceSum", dict(keepdims=0), [(3, 7, 13), i64(-2)]),
    "reduce_sum_opset11_attr": Case(
        "ReduceSum", dict(axes=[1, 2], keepdims=0), [(2, 7, 5)], opset=11
    ),
    "reduce_max_axis2": Case("ReduceMax", {}, [(3, 7, 13), i64(2)]),
    "reduce_max_neg_nokeep": Case("ReduceMax", dict(keepdims=0), [(3, 7, 13), i64(-3, -1)]),
    "reduce_max_all_nokeep": Case("ReduceMax", dict(keepdims=0), [(7, 13)]),
    # -- forwarding ops
    "identity": Case("Identity", {}, [(7, 13)]),
    "dropout_inference": Case("Dropout", {}, [(7, 13), scalar(0.3)]),
    "cast_f32_to_f32": Case("Cast", dict(to=TensorProto.FLOAT), [(7, 13)]),
}


def _random_binary_cases(n: int) -> dict[str, Case]:
    """Add/Sub/Mul/Div on random broadcast-compatible shapes from a seeded RNG."""
    rng = np.random.default_rng(SEED)
    cases = {}
    for i in range(n):
        op = ("Add", "Sub", "Mul", "Div")[i % 4]
        rank = int(rng.integers(1, 5))
        full = [int(d) for d in rng.choice([1, 3, 7, 13, 33], rank)]
        a = [d if rng.random() < 0.7 else 1 for d in full]
        b = [d if rng.random() < 0.7 else 1 for d in full][int(rng.integers(0, rank)) :]
        if rng.random() < 0.5:
            a, b = b, a
        cases[f"{op.lower()}_{'x'.join(map(str, a)) or 's'}_{'x'.join(map(str, b)) or 's'}"] = Case(
            op, {}, [tuple(a), tuple(b)], positive=op == "Div"
        )
    cases["add_scalar_const"] = Case("Add", {}, [(7, 13), scalar(0.5)])
    cases["mul_bcast_both"] = Case("Mul", {}, [(13, 1), (1, 33)])
    return cases


def _random_window_cases(n: int) -> dict[str, Case]:
    """Conv / MaxPool / AveragePool with random sizes, groups, strides, pads, dilations."""
    rng = np.random.default_rng(SEED + 2)
    cases: dict[str, Case] = {}
    while len(cases) < 3 * n:
        h, w = (int(v) for v in rng.choice([5, 7, 9, 13], 2))
        k = [int(v) for v in rng.integers(1, 4, 2)]
        s = [int(v) for v in rng.integers(1, 4, 2)]
        d = [int(v) for v in rng.integers(1, 3, 2)]
        pads = [int(rng.integers(0, kk)) for kk in k + k]  # ONNX Runtime wants pad < kernel
        if any(
            (kk - 1) * dd + 1 > dim + p0 + p1
            for kk, dd, dim, p0, p1 in zip(k, d, (h, w), pads[:2], pads[2:])
        ):
            continue
        i = len(cases) // 3
        group = int(rng.choice([1, 2, 3]))
        cin, cout = group * int(rng.integers(1, 4)), group * int(rng.integers(1, 3))
        cases[f"rand_conv{i}"] = Case(
            "Conv",
            dict(strides=s, pads=pads, dilations=d, group=group),
            [(1, cin, h, w), (cout, cin // group, *k), (cout,)],
        )
        ceil = int(rng.integers(0, 2))
        cases[f"rand_maxpool{i}"] = Case(
            "MaxPool",
            dict(kernel_shape=k, strides=s, pads=pads, dilations=d, ceil_mode=ceil),
            [(1, 3, h, w)],
        )
        cases[f"rand_avgpool{i}"] = Case(
            "AveragePool",
            dict(
                kernel_shape=k,
                strides=s,
                pads=pads,
                ceil_mode=ceil,
                count_include_pad=int(rng.integers(0, 2)),
            ),
            [(2, 2, h, w)],
        )
    return cases


CASES.update(_random_binary_cases(12))
CASES.update(_random_window_cases(6))


def single_node_model(case: Case) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model of one node and random feeds for its runtime inputs."""
    rng = np.random.default_rng(SEED + sum(map(ord, case.op)))
    lo, hi = (0.5, 2.0) if case.positive else (-2.0, 2.0)
    names, inputs, inits, feeds = [], [], [], {}
    for i, x in enumerate(case.inputs):
        name = f"in{i}" if x is not None else ""
        names.append(name)
        if isinstance(x, np.ndarray):
            inits.append(numpy_helper.from_array(x, name))
        elif x is not None:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(x)))
            feeds[name] = rng.uniform(lo, hi, x).astype(np.float32)
    while names and not names[-1]:
        names.pop()
    outs = [f"out{i}" for i in range(case.n_out)]
    node = helper.make_node(case.op, names, outs, **case.attrs)
    graph = helper.make_graph(
        [node],
        case.op,
        inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8  # what onnxruntime accepts
    return model, feeds


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    want = reference(model, feeds)
    compiled = compile_model(model)
    got = compiled.run(feeds)
    for name, w in zip([o.name for o in model.graph.output], want, strict=True):
        assert got[name].shape == w.shape, (name, got[name].shape, w.shape)
        np.testing.assert_allclose(got[name], w, rtol=RTOL, atol=ATOL, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator(name: str) -> None:
    check(*single_node_model(CASES[name]))


UNIT_TESTED = {
    # no ONNX node test of these has only float32/int32/int64/bool tensors
    **dict.fromkeys(
        "QuantizeLinear DequantizeLinear DynamicQuantizeLinear MatMulInteger ConvInteger "
        "QLinearMatMul QLinearConv".split(),
        "tests/compiler/test_quantized_models.py",
    ),
    "Einsum": "tests/compiler/frontend/test_ops_math.py",
    "Optional": "tests/compiler/frontend/test_ops_optional.py",
    "ai.onnx.ml.TreeEnsembleRegressor": "tests/compiler/frontend/test_ops_ml.py",
}
"""Operators whose numeric tests live elsewhere, with where."""


def _node_tested_operators() -> set[str]:
    """The operators of the ONNX node tests that tests/test_onnx_backend.py runs (in its
    families, not excluded, in scope): each checked there for exact types and values."""
    import re
    import warnings

    from onnx.backend.test.loader import load_model_tests

    from tests.support.onnx_backend import EXCLUDED, FAMILIES, in_scope

    families = [re.compile(p) for p in FAMILIES]
    excluded = [re.compile(p) for p in EXCLUDED]
    ops: set[str] = set()
    with warnings.catch_warnings():  # the loader's data generators warn about overflowing casts
        warnings.simplefilter("ignore", RuntimeWarning)
        cases = load_model_tests(kind="node")
    for case in cases:
        name = f"{case.name}_cpu"
        if (
            case.model is not None
            and any(p.search(name) for p in families)
            and not any(p.search(name) for p in excluded)
            and in_scope(case.model)
        ):
            ops |= {
                n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                for n in case.model.graph.node
            }
    return ops


def test_every_supported_operator_has_a_case() -> None:
    from compiler.frontend.onnx import CONVERTERS

    covered = {c.op for c in CASES.values()} | _node_tested_operators() | set(UNIT_TESTED)
    assert set(CONVERTERS) <= covered, sorted(set(CONVERTERS) - covered)
    for path in set(UNIT_TESTED.values()):
        assert (Path(__file__).parent.parent / path).is_file(), path


def test_constant_shape_constant_of_shape() -> None:
    # Shape(x) -> ConstantOfShape(0.5) -> Add(x, .) -> Mul(., Constant): folded at import time
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node(
            "ConstantOfShape",
            ["s"],
            ["h"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]),
        ),
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(f32(2.0, -3.0, 0.5))),
        helper.make_node("Add", ["x", "h"], ["t"]),
        helper.make_node("Mul", ["t", "k"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    x = np.random.default_rng(SEED).uniform(-1, 1, (7, 3)).astype(np.float32)
    check(model, {"x": x})
