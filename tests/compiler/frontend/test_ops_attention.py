"""Attention, RotaryEmbedding, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
(compiler/frontend/ops/attention.py, losses.py): compiled to machine code and checked against
onnx's reference evaluator, several attributes per model to keep the compile count low; and
the import errors for unsupported attribute values and bad inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import assert_outputs_match

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

rng = np.random.default_rng(7)


def make(node: onnx.NodeProto, inputs, outputs, opset: int) -> onnx.ModelProto:
    """A one-node model: inputs [(name, elem type, shape)], outputs [(name, elem type)]."""
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(inputs) -> dict[str, np.ndarray]:
    out = {}
    for n, t, s in inputs:
        if t == F:
            out[n] = rng.standard_normal(s).astype(np.float32)
        elif t == B:
            out[n] = rng.random(s) < 0.7
    return out


def check(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], tol: float = 1e-5
) -> dict[str, np.ndarray]:
    ours = compile_model(model).run(feeds)
    assert_outputs_match(ours, ReferenceEvaluator(model).run(None, feeds), tol)
    return ours


def attention(ins, outs, opset=23, **attrs) -> onnx.NodeProto:
    return helper.make_node("Attention", ins, outs, name="attn", **attrs)


# ----------------------------------------------------------------------------- Attention


def test_attention_4d_gqa_causal_past_short_float_mask_scores():
    """GQA (6 query heads over 2 kv heads), a KV cache with present outputs, is_causal aligned
    bottom-right by the past length, a float mask shorter than the total length (padded with
    -inf), scale, and the scores after bias (mode 2)."""
    b, hq, hkv, sq, skv, past, d, dv = 2, 6, 2, 3, 3, 4, 4, 5
    inputs = [
        ("Q", F, [b, hq, sq, d]),
        ("K", F, [b, hkv, skv, d]),
        ("V", F, [b, hkv, skv, dv]),
        ("mask", F, [sq, past + skv - 1]),
        ("pk", F, [b, hkv, past, d]),
        ("pv", F, [b, hkv, past, dv]),
    ]
    node = attention(
        ["Q", "K", "V", "mask", "pk", "pv"],
        ["Y", "present_key", "present_value", "qk"],
        is_causal=1,
        scale=0.3,
        qk_matmul_output_mode=2,
    )
    outs = [("Y", F), ("present_key", F), ("present_value", F), ("qk", F)]
    check(make(node, inputs, outs, 23), feeds_for(inputs))


@pytest.mark.parametrize("mode", [1, 3])
def test_attention_3d_softcap_bool_mask(mode):
    """3-D inputs split into heads by q_num_heads / kv_num_heads (multi-query: one kv head), a
    broadcast bool mask, softcap, and the softcapped scores (mode 1) or probabilities (3)."""
    b, sq, skv, hq, d = 2, 4, 5, 4, 3
    inputs = [
        ("Q", F, [b, sq, hq * d]),
        ("K", F, [b, skv, d]),
        ("V", F, [b, skv, 2]),
        ("mask", B, [1, sq, skv]),
    ]
    node = attention(
        ["Q", "K", "V", "mask"],
        ["Y", "", "", "qk"],
        q_num_heads=hq,
        kv_num_heads=1,
        softcap=1.5,
        qk_matmul_output_mode=mode,
    )
    check(make(node, inputs, [("Y", F), ("qk", F)], 23), feeds_for(inputs))


def test_attention_mode_0_is_the_product_before_softcap():
    """Mode 0 outputs the raw Q K^T product as the spec and the operator's function body say
    (onnx's Python reference returns the softcapped one): compared with the same model
    without softcap."""
    inputs = [("Q", F, [1, 2, 3, 4]), ("K", F, [1, 2, 5, 4]), ("V", F, [1, 2, 5, 4])]
    feeds = feeds_for(inputs)
    outs = [("Y", F), ("qk", F)]
    capped = make(attention(["Q", "K", "V"], ["Y", "", "", "qk"], softcap=0.5), inputs, outs, 23)
    plain = make(attention(["Q", "K", "V"], ["Y", "", "", "qk"]), inputs, outs, 23)
    ours = compile_model(capped).run(feeds)
    y_ref, qk_ref = ReferenceEvaluator(capped).run(None, feeds)
    np.testing.assert_allclose(ours["Y"], y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours["qk"], ReferenceEvaluator(plain).run(None, feeds)[1], 1e-5)
    assert np.abs(qk_ref).max() <= 0.5 < np.abs(ours["qk"]).max()


def test_attention_run_time_nonpad_kv_seqlen_fully_masked_rows():
    """Opset 24's external cache: per-batch nonpad_kv_seqlen (a run-time input) masks padding
    keys and shifts the causal frontier; a length shorter than the query block leaves rows
    with no key, which must come out as zeros (not NaN), also in the mode-3 probabilities."""
    b, h, sq, skv, d = 3, 2, 3, 6, 4
    inputs = [
        ("Q", F, [b, h, sq, d]),
        ("K", F, [b, h, skv, d]),
        ("V", F, [b, h, skv, d]),
        ("lens", I64, [b]),
    ]
    node = attention(
        ["Q", "K", "V", "", "", "", "lens"],
        ["Y", "", "", "qk"],
        is_causal=1,
        qk_matmul_output_mode=3,
    )
    model = make(node, inputs, [("Y", F), ("qk", F)], 24)
    feeds = feeds_for(inputs) | {"lens": np.array([6, 4, 1], np.int64)}
    y = check(model, feeds)["Y"]
    assert np.all(y[2, :, :2] == 0) and np.all(np.isfinite(y))


def test_attention_sliding_window_with_past():
    """Opset 25's sliding window (left and right bounds) aligned by the past length; the masks
    of positions only are static (no comparison in the graph)."""
    b, h, sq, past, d = 1, 2, 3, 4, 4
    inputs = [
        ("Q", F, [b, h, sq, d]),
        ("K", F, [b, h, sq, d]),
        ("V", F, [b, h, sq, d]),
        ("pk", F, [b, h, past, d]),
        ("pv", F, [b, h, past, d]),
    ]
    node = attention(
        ["Q", "K", "V", "", "pk", "pv"], ["Y"], left_window_size=2, right_window_size=1
    )
    model = make(node, inputs, [("Y", F)], 25)
    names = [op.name for op in import_onnx(model).walk()]
    assert "graph.less_equal" not in names and "graph.where" not in names
    check(model, feeds_for(inputs))


def test_attention_constant_bool_mask_folds_into_a_static_bias():
    """A mask known at import time becomes a constant bias (no compare or where in the graph),
    and its fully masked row a constant guard."""
    mask = np.ones((3, 4), np.bool_)
    mask[1] = False
    inputs = [("Q", F, [1, 2, 3, 4]), ("K", F, [1, 2, 4, 4]), ("V", F, [1, 2, 4, 4])]
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["mask"], value=onnx.numpy_helper.from_array(mask)),
            attention(["Q", "K", "V", "mask"], ["Y"]),
        ],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("Y", F, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    names = [op.name for op in import_onnx(model).walk()]
    assert "graph.equal" not in names and "graph.reduce_max" not in names
    assert names.count("graph.where") == 1
    feeds = feeds_for(inputs)
    check(model, feeds)


ATTN_IN = [("Q", F, [1, 4, 3, 8]), ("K", F, [1, 2, 5, 8]), ("V", F, [1, 2, 5, 8])]


@pytest.mark.parametrize(
    "inputs, ins, attrs, opset, message",
    [
        (
            ATTN_IN,
            ["Q", "K", "V"],
            {"softmax_precision": TensorProto.FLOAT16},
            23,
            "softmax_precision FLOAT16 is not supported",
        ),
        (
            ATTN_IN,
            ["Q", "K", "V"],
            {"qk_matmul_output_mode": 4},
            23,
            "qk_matmul_output_mode must be 0, 1, 2 or 3",
        ),
        (ATTN_IN, ["Q", "K", "V"], {"scale": -1.0}, 23, "scale must be positive"),
        (
            [("Q", F, [1, 3, 3, 8]), *ATTN_IN[1:]],
            ["Q", "K", "V"],
            {},
            23,
            "3 query heads are not a multiple of 2 key/value heads",
        ),
        (
            [("Q", F, [1, 3, 12]), ("K", F, [1, 5, 12]), ("V", F, [1, 5, 12])],
            ["Q", "K", "V"],
            {},
            23,
            "need the q_num_heads and kv_num_heads attributes",
        ),
        (
            [*ATTN_IN, ("m", F, [3, 6])],
            ["Q", "K", "V", "m"],
            {},
            23,
            "last dim of at most the total sequence length 5",
        ),
        (
            [*ATTN_IN, ("m", F, [2, 3, 5])],
            ["Q", "K", "V", "m"],
            {},
            23,
            "does not broadcast to [batch, q_heads, q_len, total_len] = [1, 4, 3, 5]",
        ),
        (
            [*ATTN_IN, ("pk", F, [1, 2, 2, 8])],
            ["Q", "K", "V", "", "pk"],
            {},
            23,
            "past_key and past_value must be given together",
        ),
        (
            ATTN_IN,
            ["Q", "K", "V"],
            {"q_num_heads": 2},
            23,
            "q_num_heads=2 disagrees with the 4-D inputs' 4 heads",
        ),
    ],
)
def test_attention_errors(inputs, ins, attrs, opset, message):
    model = make(attention(ins, ["Y"], **attrs), inputs, [("Y", F)], opset)
    with pytest.raises(FrontendError, match="Attention node 'attn'") as e:
        import_onnx(model)
    assert message in str(e.value)


# ----------------------------------------------------------------------------- RotaryEmbedding


def test_rotary_3d_interleaved_partial_with_run_time_position_ids():
    """3-D input split by num_heads, interleaved pairs, a rotary_embedding_dim below the head
    size (the rest passes through) and run-time position_ids gathering from the caches."""
    b, s, h, d, rot, max_pos = 2, 3, 2, 8, 4, 10
    inputs = [
        ("x", F, [b, s, h * d]),
        ("cos", F, [max_pos, rot // 2]),
        ("sin", F, [max_pos, rot // 2]),
        ("pos", I64, [b, s]),
    ]
    node = helper.make_node(
        "RotaryEmbedding",
        ["x", "cos", "sin", "pos"],
        ["y"],
        num_heads=h,
        interleaved=1,
        rotary_embedding_dim=rot,
    )
    feeds = feeds_for(inputs) | {"pos": rng.integers(0, max_pos, (b, s)).astype(np.int64)}
    check(make(node, inputs, [("y", F)], 23), feeds)


def test_rotary_4d_halves_without_position_ids():
    b, h, s, d = 1, 3, 4, 6
    inputs = [("x", F, [b, h, s, d]), ("cos", F, [b, s, d // 2]), ("sin", F, [b, s, d // 2])]
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"])
    check(make(node, inputs, [("y", F)], 23), feeds_for(inputs))


@pytest.mark.parametrize(
    "inputs, attrs, message",
    [
        (
            [("x", F, [1, 3, 12]), ("c", F, [1, 3, 3]), ("s", F, [1, 3, 3])],
            {},
            "needs the num_heads attribute",
        ),
        (
            [("x", F, [1, 2, 3, 6]), ("c", F, [1, 3, 3]), ("s", F, [1, 3, 3])],
            {"rotary_embedding_dim": 5},
            "rotary_embedding_dim=5 must be even",
        ),
        (
            [("x", F, [1, 2, 3, 6]), ("c", F, [1, 3, 2]), ("s", F, [1, 3, 2])],
            {},
            "cos_cache must give [batch, seq, rotary_embedding_dim / 2] = [1, 3, 3] values",
        ),
    ],
)
def test_rotary_errors(inputs, attrs, message):
    node = helper.make_node("RotaryEmbedding", ["x", "c", "s"], ["y"], name="rope", **attrs)
    with pytest.raises(FrontendError, match="RotaryEmbedding node 'rope'") as e:
        import_onnx(make(node, inputs, [("y", F)], 23))
    assert message in str(e.value)


# ----------------------------------------------------------------------------- losses


def loss_feeds(inputs, classes: int) -> dict[str, np.ndarray]:
    feeds = feeds_for(inputs)
    t = next(s for n, _, s in inputs if n == "t")
    feeds["t"] = rng.integers(0, classes, t).astype(np.int64)
    feeds["t"].flat[::3] = 1  # some targets hit ignore_index
    if "w" in feeds:
        feeds["w"] = rng.random(classes).astype(np.float32) + 0.1
    return feeds


@pytest.mark.parametrize(
    "op, reduction, weight, ignore",
    [
        ("NegativeLogLikelihoodLoss", "mean", True, 1),
        ("NegativeLogLikelihoodLoss", "none", False, None),
        ("SoftmaxCrossEntropyLoss", "mean", False, 1),
        ("SoftmaxCrossEntropyLoss", "sum", True, None),
    ],
)
def test_losses(op, reduction, weight, ignore):
    """Rank-4 scores [N, C, d1, d2] with run-time int64 targets; SoftmaxCrossEntropyLoss also
    returns its log-probabilities."""
    n, c, d1, d2 = 2, 5, 3, 2
    inputs = [("x", F, [n, c, d1, d2]), ("t", I64, [n, d1, d2])]
    ins = ["x", "t"]
    if weight:
        inputs.append(("w", F, [c]))
        ins.append("w")
    attrs: dict = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    outs = [("loss", F)] + ([("log_prob", F)] if op == "SoftmaxCrossEntropyLoss" else [])
    node = helper.make_node(op, ins, [o for o, _ in outs], **attrs)
    check(make(node, inputs, outs, 13), loss_feeds(inputs, c))


@pytest.mark.parametrize(
    "inputs, attrs, message",
    [
        (
            [("x", F, [2, 3]), ("t", I64, [2])],
            {"reduction": "max"},
            "reduction must be one of none, sum, mean, got 'max'",
        ),
        ([("x", F, [2, 3]), ("t", I64, [3])], {}, "target must have shape [2]"),
        (
            [("x", F, [2, 3]), ("t", I64, [2]), ("w", F, [2])],
            {},
            "weight must be a float32 tensor of shape [3]",
        ),
    ],
)
def test_loss_errors(inputs, attrs, message):
    ins = [n for n, _, _ in inputs]
    node = helper.make_node("NegativeLogLikelihoodLoss", ins, ["loss"], name="nll", **attrs)
    with pytest.raises(FrontendError, match="NegativeLogLikelihoodLoss node 'nll'") as e:
        import_onnx(make(node, inputs, [("loss", F)], 13))
    assert message in str(e.value)
