"""Converters of the opset-27 recurrent-sequence operators LinearAttention and
CausalConvWithState, composed of graph ops.

The time dimension is static, so LinearAttention's state recurrence (linear, gated, delta and
gated-delta rules) is unrolled step by step as the operator's reference implementation runs it:
chunk_size is only a tuning hint for chunk-parallel kernels and does not change the result.
CausalConvWithState is a depthwise convolution over the past state (or zeros) followed by the
input, whose last k - 1 positions become the new state.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from compiler.frontend.importer import Importer, Value, attrs, converter, element_type_of, text
from dialects import graph as g

UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")
ACTIVATIONS = ("none", "silu", "swish")


def _f32(imp: Importer, node: onnx.NodeProto, i: int, what: str, rank: int) -> SSAValue | None:
    """Input i (None when absent), checked to be a float32 tensor of the given rank."""
    if not imp.has(node, i):
        return None
    x = imp.value(node.input[i])
    if element_type_of(x) != f32:
        raise imp.error(f"{what} must be a float32 tensor, got {element_type_of(x)}")
    if len(imp.shape_of(x)) != rank:
        raise imp.error(f"{what} must be {rank}-D, got shape {list(imp.shape_of(x))}")
    return x


def _steps(imp: Importer, x: SSAValue, axis: int) -> list[SSAValue]:
    """x cut into its size-1 pieces along `axis` (the time steps)."""
    n = imp.shape_of(x)[axis]
    if n == 1:
        return [x]
    return list(imp.emit(g.SplitOp(x, axis=axis, sizes=[1] * n)).results)


def _per_head(imp: Importer, x: SSAValue, heads: int) -> SSAValue:
    """(B, T, heads * d) -> (B, heads, T, d)."""
    b, t, hd = imp.shape_of(x)
    x = imp.op(g.ReshapeOp(x, [b, t, heads, hd // heads]))
    return imp.op(g.TransposeOp(x, perm=[0, 2, 1, 3]))


@converter("LinearAttention")
def convert_linear_attention(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Linear attention over packed (B, T, H * D) inputs with GQA: per step t and KV head,
    S = exp(g_t) * S (gated rules), v_t = beta_t * (v_t - S^T k_t) (delta rules),
    S = S + k_t v_t^T, and each of the head's query heads reads o_t = scale * q_t^T S."""
    a = attrs(node)
    rule = text(a.get("update_rule", b"gated_delta"))
    if rule not in UPDATE_RULES:
        raise imp.error(f"unsupported update_rule '{rule}' (supported: {', '.join(UPDATE_RULES)})")
    hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])
    if hq <= 0 or hkv <= 0 or hq % hkv:
        raise imp.error(f"q_num_heads ({hq}) must be a positive multiple of kv_num_heads ({hkv})")
    q = _f32(imp, node, 0, "query", 3)
    k = _f32(imp, node, 1, "key", 3)
    v = _f32(imp, node, 2, "value", 3)
    assert q is not None and k is not None and v is not None
    past = _f32(imp, node, 3, "past_state", 4)
    decay = _f32(imp, node, 4, "decay", 3)
    beta = _f32(imp, node, 5, "beta", 3)
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for name, given, needed in (("decay", decay, gated), ("beta", beta, delta)):
        if needed and given is None:
            raise imp.error(f"update_rule '{rule}' requires the {name} input")
        if not needed and given is not None:
            raise imp.error(f"update_rule '{rule}' forbids the {name} input")

    b, t, q_hidden = imp.shape_of(q)
    if q_hidden % hq:
        raise imp.error(f"query hidden size {q_hidden} is not a multiple of q_num_heads={hq}")
    dk = q_hidden // hq
    v_hidden = imp.shape_of(v)[2]
    if v_hidden % hkv:
        raise imp.error(f"value hidden size {v_hidden} is not a multiple of kv_num_heads={hkv}")
    dv = v_hidden // hkv
    expected = {"key": [b, t, hkv * dk], "value": [b, t, hkv * dv]}
    for name, x in (("key", k), ("value", v)):
        if list(imp.shape_of(x)) != expected[name]:
            raise imp.error(
                f"{name} shape {list(imp.shape_of(x))} does not match {expected[name]} "
                f"(batch, sequence, kv_num_heads * head size)"
            )
    if t == 0:
        raise imp.error("a zero-length sequence is not supported")
    if past is not None and list(imp.shape_of(past)) != [b, hkv, dk, dv]:
        raise imp.error(
            f"past_state shape {list(imp.shape_of(past))} does not match {[b, hkv, dk, dv]}"
        )
    scale = float(a.get("scale", 0.0)) or 1.0 / math.sqrt(dk)

    group = hq // hkv
    # query (B, T, H_kv * G * d_k) -> (B, H_kv, T, G, d_k): query head h reads KV head h // G
    q5 = imp.op(g.ReshapeOp(q, [b, t, hkv, group, dk]))
    q5 = imp.op(g.TransposeOp(q5, perm=[0, 2, 1, 3, 4]))
    q_steps = [imp.op(g.ReshapeOp(s, [b, hkv, group, dk])) for s in _steps(imp, q5, 2)]
    k_steps = _steps(imp, _per_head(imp, k, hkv), 2)  # (B, H_kv, 1, d_k) each
    v_steps = _steps(imp, _per_head(imp, v, hkv), 2)  # (B, H_kv, 1, d_v) each

    gates: list[SSAValue] = []
    if decay is not None:
        dshape = imp.shape_of(decay)
        if dshape[:2] != (b, t) or dshape[2] not in (hkv, hkv * dk):
            raise imp.error(
                f"decay shape {list(dshape)} must be [{b}, {t}, {hkv}] (per head) or "
                f"[{b}, {t}, {hkv * dk}] (per key dimension)"
            )
        # exp(g) as (B, H_kv, d_k or 1, 1): it scales the rows of the (d_k, d_v) state
        e = imp.op(g.ExpOp(_per_head(imp, decay, hkv)))
        gates = [imp.op(g.ReshapeOp(s, [b, hkv, dshape[2] // hkv, 1])) for s in _steps(imp, e, 2)]
    betas: list[SSAValue] = []
    if beta is not None:
        bshape = imp.shape_of(beta)
        if bshape[:2] != (b, t) or bshape[2] not in (hkv, 1):
            raise imp.error(f"beta shape {list(bshape)} must be [{b}, {t}, {hkv}] or [{b}, {t}, 1]")
        betas = _steps(imp, _per_head(imp, beta, bshape[2]), 2)  # (B, H_kv or 1, 1, 1) each

    state: SSAValue | None = past  # None: zeros, the first step starts from nothing
    outs: list[SSAValue] = []
    for i in range(t):
        kt, vt = k_steps[i], v_steps[i]
        if gated and state is not None:
            state = imp.op(g.MulOp(state, gates[i]))
        if delta:
            if state is not None:
                retrieved = imp.op(g.MatmulOp(kt, state))  # (B, H_kv, 1, d_v) = k_t^T S
                vt = imp.op(g.SubOp(vt, retrieved))
            vt = imp.op(g.MulOp(betas[i], vt))
        kcol = imp.op(g.ReshapeOp(kt, [b, hkv, dk, 1]))
        write = imp.op(g.MulOp(kcol, vt))  # k_t v_t^T: (B, H_kv, d_k, d_v)
        state = write if state is None else imp.op(g.AddOp(state, write))
        o = imp.op(g.MatmulOp(q_steps[i], state))  # (B, H_kv, G, d_v)
        outs.append(imp.op(g.ReshapeOp(o, [b, 1, hq * dv])))
    out = outs[0] if t == 1 else imp.op(g.ConcatOp(outs, axis=1))
    out = imp.op(g.MulOp(out, imp.scalar(scale)))
    assert state is not None
    return [out, state]


@converter("CausalConvWithState")
def convert_causal_conv_with_state(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Depthwise causal conv1d: the input preceded by past_state (zeros when absent) convolved
    with each channel's kernel (group = channels, no padding), plus bias, optionally followed
    by SiLU; present_state is the last k - 1 positions of that padded sequence."""
    activation = text(attrs(node).get("activation", b"none"))
    if activation not in ACTIVATIONS:
        raise imp.error(
            f"unsupported activation '{activation}' (supported: {', '.join(ACTIVATIONS)})"
        )
    x = _f32(imp, node, 0, "input", 3)
    w = _f32(imp, node, 1, "weight", 3)
    assert x is not None and w is not None
    bias = _f32(imp, node, 2, "bias", 1)
    past = _f32(imp, node, 3, "past_state", 3)
    batch, channels, length = imp.shape_of(x)
    wc, one, k = imp.shape_of(w)
    if wc != channels or one != 1 or k < 1:
        raise imp.error(
            f"weight shape {[wc, one, k]} must be [{channels}, 1, k] with k >= 1 (depthwise)"
        )
    if bias is not None and list(imp.shape_of(bias)) != [channels]:
        raise imp.error(f"bias shape {list(imp.shape_of(bias))} must be [{channels}]")
    if past is not None and list(imp.shape_of(past)) != [batch, channels, k - 1]:
        raise imp.error(
            f"past_state shape {list(imp.shape_of(past))} must be {[batch, channels, k - 1]}"
        )
    if length == 0:
        raise imp.error("a zero-length input is not supported")
    if k == 1:
        padded = x
    elif past is None:
        padded = imp.op(g.PadOp(x, pads=[0, 0, k - 1, 0, 0, 0]))
    else:
        padded = imp.op(g.ConcatOp([past, x], axis=2))
    y = imp.op(g.ConvOp(padded, w, bias, strides=[1], pads=[0, 0], dilations=[1], group=channels))
    if activation != "none":  # silu / swish: y * sigmoid(y)
        y = imp.op(g.MulOp(y, imp.op(g.SigmoidOp(y))))
    total = length + k - 1
    present: Value
    if k == 1:
        present = np.zeros((batch, channels, 0), np.float32)
    else:
        present = imp.op(
            g.SliceOp(
                padded,
                starts=[0, 0, length],
                ends=[batch, channels, total],
                steps=[1, 1, 1],
            )
        )
    return [y, present]
