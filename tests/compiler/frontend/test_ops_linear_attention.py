"""LinearAttention and CausalConvWithState (compiler/frontend/ops/linear_attention.py): compiled
results against onnx's reference implementation, and the error of every refused attribute value
or input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


def make(op: str, ins: list[str], shapes: dict[str, list[int]], **attrs) -> onnx.ModelProto:
    """A one-node opset-27 model whose inputs are the non-empty names of `ins`."""
    n = helper.make_node(op, ins, ["y", "state"], name="n0", **attrs)
    graph = helper.make_graph(
        [n],
        "g",
        [helper.make_tensor_value_info(k, F, s) for k, s in shapes.items()],
        [helper.make_tensor_value_info(k, F, None) for k in ("y", "state")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ours = compile_model(model).run(feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    for name, r in zip(("y", "state"), ref, strict=True):
        assert ours[name].shape == r.shape, name
        np.testing.assert_allclose(ours[name], r, rtol=1e-4, atol=1e-5, err_msg=name)


def feeds_for(shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    return {k: rng.standard_normal(s).astype(np.float32) * 0.5 for k, s in shapes.items()}


LA_CASES = {
    # rule, q heads, kv heads, d_k, d_v, T, past, decay last dim (per head / per key), beta dim
    "linear_no_past": ("linear", 2, 2, 3, 4, 3, False, 0, 0, 0.0),
    "gated_per_key_past": ("gated", 2, 1, 3, 2, 3, True, 3, 0, 0.0),
    "delta_beta_scalar": ("delta", 2, 2, 2, 3, 3, False, 0, 1, 0.5),
    "gated_delta_gqa_past": ("gated_delta", 4, 2, 3, 2, 2, True, 2, 2, 0.0),
}


@pytest.mark.parametrize("case", LA_CASES)
def test_linear_attention_matches_reference(case):
    rule, hq, hkv, dk, dv, t, past, dlast, blast, scale = LA_CASES[case]
    b = 2
    shapes = {"q": [b, t, hq * dk], "k": [b, t, hkv * dk], "v": [b, t, hkv * dv]}
    ins = ["q", "k", "v", "", "", ""]
    if past:
        shapes["s"], ins[3] = [b, hkv, dk, dv], "s"
    if dlast:
        shapes["g"], ins[4] = [b, t, dlast], "g"
    if blast:
        shapes["beta"], ins[5] = [b, t, blast], "beta"
    while ins[-1] == "":
        ins.pop()
    model = make(
        "LinearAttention",
        ins,
        shapes,
        q_num_heads=hq,
        kv_num_heads=hkv,
        update_rule=rule,
        scale=scale,
    )
    feeds = feeds_for(shapes)
    if "g" in feeds:
        feeds["g"] = -np.abs(feeds["g"])  # log-space decay
    if "beta" in feeds:
        feeds["beta"] = 1 / (1 + np.exp(-feeds["beta"]))
    check(model, feeds)


CONV_CASES = {
    "silu_bias_past": ("silu", 4, 5, True, True),
    "short_input_no_past": ("none", 5, 2, False, False),
    "kernel_one_swish": ("swish", 1, 3, True, False),
}


@pytest.mark.parametrize("case", CONV_CASES)
def test_causal_conv_with_state_matches_reference(case):
    act, k, length, bias, past = CONV_CASES[case]
    shapes = {"x": [2, 3, length], "w": [3, 1, k]}
    ins = ["x", "w", "", ""]
    if bias:
        shapes["b"], ins[2] = [3], "b"
    if past:
        shapes["p"], ins[3] = [2, 3, k - 1], "p"
    while ins[-1] == "":
        ins.pop()
    check(make("CausalConvWithState", ins, shapes, activation=act), feeds_for(shapes))


QKV = {"q": [1, 2, 4], "k": [1, 2, 4], "v": [1, 2, 4]}


@pytest.mark.parametrize(
    ("ins", "shapes", "attrs", "message"),
    [
        (
            ["q", "k", "v"],
            QKV,
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "slow"},
            "unsupported update_rule 'slow'",
        ),
        (["q", "k", "v"], QKV, {"q_num_heads": 2}, "required attribute 'kv_num_heads' is missing"),
        (
            ["q", "k", "v"],
            QKV,
            {"q_num_heads": 3, "kv_num_heads": 2, "update_rule": "linear"},
            r"q_num_heads \(3\) must be a positive multiple of kv_num_heads \(2\)",
        ),
        (
            ["q", "k", "v"],
            QKV,
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated"},
            "update_rule 'gated' requires the decay input",
        ),
        (
            ["q", "k", "v", "", "", "b"],
            {**QKV, "b": [1, 2, 2]},
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
            "update_rule 'linear' forbids the beta input",
        ),
        (
            ["q", "k", "v", "", "g", "b"],
            {**QKV, "g": [1, 2, 3], "b": [1, 2, 2]},
            {"q_num_heads": 2, "kv_num_heads": 2},
            r"decay shape \[1, 2, 3\] must be",
        ),
        (
            ["q", "k", "v", "", "", "b"],
            {**QKV, "b": [1, 2, 3]},
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "delta"},
            r"beta shape \[1, 2, 3\] must be",
        ),
        (
            ["q", "k", "v", "s"],
            {**QKV, "s": [1, 2, 2, 3]},
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
            r"past_state shape \[1, 2, 2, 3\] does not match \[1, 2, 2, 2\]",
        ),
        (
            ["q", "k", "v"],
            {**QKV, "k": [1, 2, 6]},
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
            r"key shape \[1, 2, 6\] does not match \[1, 2, 4\]",
        ),
        (
            ["x", "w"],
            {"x": [1, 2, 4], "w": [2, 1, 3]},
            {"activation": "gelu"},
            "unsupported activation 'gelu'",
        ),
        (
            ["x", "w"],
            {"x": [1, 2, 4], "w": [2, 2, 3]},
            {},
            r"weight shape \[2, 2, 3\] must be \[2, 1, k\]",
        ),
        (
            ["x", "w", "", "p"],
            {"x": [1, 2, 4], "w": [2, 1, 3], "p": [1, 2, 3]},
            {},
            r"past_state shape \[1, 2, 3\] must be \[1, 2, 2\]",
        ),
        (
            ["x", "w", "b"],
            {"x": [1, 2, 4], "w": [2, 1, 3], "b": [3]},
            {},
            r"bias shape \[3\] must be \[2\]",
        ),
    ],
)
def test_errors_name_the_node(ins, shapes, attrs, message):
    op = "CausalConvWithState" if ins[0] == "x" else "LinearAttention"
    with pytest.raises(FrontendError, match=f"^{op} node 'n0': .*{message}"):
        import_onnx(make(op, ins, shapes, **attrs))
