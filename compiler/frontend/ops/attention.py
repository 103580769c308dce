"""Converters of the transformer operators Attention (opsets 23 to 25) and RotaryEmbedding
(opset 23), composed of graph ops: matmuls, softmax, static index masks, Where and Gather.

Every shape is static, so masks that depend only on positions (causal, sliding window) are
numpy arrays built at import time; only what depends on run-time values (a run-time attn_mask,
`nonpad_kv_seqlen`) becomes comparisons in the graph.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    type_name,
)
from dialects import graph as g

NEG_INF = np.float32(-np.inf)

_SOFTMAX_PRECISIONS = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
"""The softmax_precision values accepted: FLOAT exactly; DOUBLE runs in float32, the widest
float type of the graph (a last-bit difference). FLOAT16 and BFLOAT16 would need rounding the
graph cannot express, so they are refused."""


def _ssa(imp: Importer, v: Value) -> SSAValue:
    return v if isinstance(v, SSAValue) else imp.op(g.ConstantOp(np.asarray(v)))


def _shape(v: Value) -> tuple[int, ...]:
    return Importer.shape_of(v) if isinstance(v, SSAValue) else tuple(np.shape(v))


def _and(imp: Importer, a: Value | None, b: Value) -> Value:
    """a & b on bool masks: numpy when both are known, graph.and otherwise."""
    if a is None:
        return b
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a & b
    return imp.op(g.AndOp(_ssa(imp, a), _ssa(imp, b)))


def _le(imp: Importer, a: Value, b: Value) -> Value:
    """a <= b on int64 tensors: numpy when both are known, graph.less_equal otherwise."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a <= b
    return imp.op(g.LessEqualOp(_ssa(imp, a), _ssa(imp, b)))


def _pad_last(imp: Importer, m: Value, total: int, fill: np.ndarray) -> Value:
    """Extend the last dim of a mask to `total` with `fill` (ONNX pads a short attn_mask)."""
    shape = _shape(m)
    if shape[-1] == total:
        return m
    tail = np.full((*shape[:-1], total - shape[-1]), fill, dtype=fill.dtype)
    if isinstance(m, np.ndarray):
        return np.concatenate([m, tail], axis=-1)
    return imp.op(g.ConcatOp([m, imp.op(g.ConstantOp(tail))], axis=len(shape) - 1))


def _heads_first(imp: Importer, x: SSAValue, heads: int, what: str) -> SSAValue:
    """[batch, seq, heads * size] -> [batch, heads, seq, size]."""
    b, s, hidden = Importer.shape_of(x)
    if heads <= 0 or hidden % heads:
        raise imp.error(f"{what} hidden size {hidden} is not a multiple of its {heads} heads")
    x = imp.op(g.ReshapeOp(x, [b, s, heads, hidden // heads]))
    return imp.op(g.TransposeOp(x, perm=[0, 2, 1, 3]))


def _grouped(imp: Importer, x: SSAValue, kv_heads: int) -> SSAValue:
    """[b, q_heads, s, d] -> [b, kv_heads, (q_heads / kv_heads) * s, d]: the query heads that
    share one key/value head (consecutive ones, as ONNX repeats each kv head) become rows of
    one matrix, so grouped-query attention needs no copy of K and V."""
    b, h, s, d = Importer.shape_of(x)
    return x if h == kv_heads else imp.op(g.ReshapeOp(x, [b, kv_heads, (h // kv_heads) * s, d]))


def _ungrouped(imp: Importer, x: SSAValue, q_heads: int) -> SSAValue:
    b, kvh, rows, d = Importer.shape_of(x)
    return x if kvh == q_heads else imp.op(g.ReshapeOp(x, [b, q_heads, rows * kvh // q_heads, d]))


@converter("Attention")
def convert_attention(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Scaled dot-product attention (MHA, GQA, MQA) with an optional KV cache, softcap, causal
    / sliding-window / padding masks and the qk_matmul_output debug output, as the operator's
    function body computes it: softmax(softcap(Q*sqrt(s) @ (K*sqrt(s))^T) + bias) @ V, where
    a query row whose bias is entirely -inf (no key allowed) gives zeros, not NaN."""
    a = attrs(node)
    q, k, v = (imp.value(n) for n in node.input[:3])
    for name, x in zip("QKV", (q, k, v), strict=True):
        if element_type_of(x) != f32:
            raise imp.error(f"{name} must be a float32 tensor, got {element_type_of(x)}")
    rank = len(imp.shape_of(q))
    if rank not in (3, 4) or len(imp.shape_of(k)) != rank or len(imp.shape_of(v)) != rank:
        raise imp.error(
            "Q, K and V must all be 3-D or all 4-D, got shapes "
            f"{[list(imp.shape_of(x)) for x in (q, k, v)]}"
        )
    q_heads_attr, kv_heads_attr = a.get("q_num_heads"), a.get("kv_num_heads")
    if rank == 3:
        if q_heads_attr is None or kv_heads_attr is None:
            raise imp.error("3-D Q, K and V need the q_num_heads and kv_num_heads attributes")
        q = _heads_first(imp, q, int(q_heads_attr), "Q")
        k = _heads_first(imp, k, int(kv_heads_attr), "K")
        v = _heads_first(imp, v, int(kv_heads_attr), "V")
    batch, q_heads, q_len, head = imp.shape_of(q)
    kb, kv_heads, kv_len, k_head = imp.shape_of(k)
    vb, v_heads, v_len, v_head = imp.shape_of(v)
    if rank == 4:
        for attr, val, dim in (
            ("q_num_heads", q_heads_attr, q_heads),
            ("kv_num_heads", kv_heads_attr, kv_heads),
        ):
            if val is not None and int(val) != dim:
                raise imp.error(f"{attr}={val} disagrees with the 4-D inputs' {dim} heads")
    if (kb, vb) != (batch, batch) or v_heads != kv_heads or v_len != kv_len or k_head != head:
        raise imp.error(
            "Q, K and V do not agree: Q [batch, q_heads, q_len, head] "
            f"{[batch, q_heads, q_len, head]}, K {[kb, kv_heads, kv_len, k_head]}, V "
            f"{[vb, v_heads, v_len, v_head]} (K and V heads and lengths, Q and K head sizes "
            "and all batches must match)"
        )
    if q_heads % kv_heads:
        raise imp.error(f"{q_heads} query heads are not a multiple of {kv_heads} key/value heads")

    # the KV cache: present = past ++ new along the sequence
    has_past = [imp.has(node, i) for i in (4, 5)]
    if any(has_past) and not all(has_past):
        raise imp.error("past_key and past_value must be given together")
    past_len = 0
    if all(has_past):
        pk, pv = imp.value(node.input[4]), imp.value(node.input[5])
        pks, pvs = imp.shape_of(pk), imp.shape_of(pv)
        if (
            len(pks) != 4
            or len(pvs) != 4
            or (pks[0], pks[1], pks[3]) != (batch, kv_heads, head)
            or (pvs[0], pvs[1], pvs[2], pvs[3]) != (batch, kv_heads, pks[2], v_head)
        ):
            raise imp.error(
                f"past_key {list(pks)} and past_value {list(pvs)} must be [batch, kv_heads, "
                f"past_len, head size] with batch {batch}, kv_heads {kv_heads}, head sizes "
                f"{head} and {v_head}"
            )
        past_len = pks[2]
        k = imp.op(g.ConcatOp([pk, k], axis=2))
        v = imp.op(g.ConcatOp([pv, v], axis=2))
    present_key, present_value = k, v
    total = past_len + kv_len

    nonpad: Value | None = None
    if imp.has(node, 6):
        if all(has_past):
            raise imp.error("nonpad_kv_seqlen cannot be combined with past_key / past_value")
        nonpad = imp.lookup(node.input[6])
        if _shape(nonpad) != (batch,):
            raise imp.error(f"nonpad_kv_seqlen must have shape [{batch}], got {_shape(nonpad)}")
        if isinstance(nonpad, SSAValue):
            if element_type_of(nonpad) != i64:
                raise imp.error(f"nonpad_kv_seqlen must be int64, got {element_type_of(nonpad)}")
            nonpad = imp.op(g.ReshapeOp(nonpad, [batch, 1, 1, 1]))
        else:
            nonpad = nonpad.astype(np.int64).reshape(batch, 1, 1, 1)

    # scores: Q and K each scaled by sqrt(scale) (as the operator specifies, against overflow)
    scale = float(a.get("scale", 1.0 / math.sqrt(head)))
    if not scale > 0:
        raise imp.error(f"scale must be positive (Q and K are scaled by its square root): {scale}")
    root = imp.scalar(float(np.sqrt(np.float32(scale))))
    qs = imp.op(g.MulOp(q, root))
    kt = imp.op(g.MulOp(imp.op(g.TransposeOp(k, perm=[0, 1, 3, 2])), root))
    qk = _ungrouped(imp, imp.op(g.MatmulOp(_grouped(imp, qs, kv_heads), kt)), q_heads)
    raw_qk = qk
    softcap = float(a.get("softcap", 0.0))
    if softcap > 0:
        c = imp.scalar(softcap)
        qk = imp.op(g.MulOp(imp.op(g.TanhOp(imp.op(g.DivOp(qk, c)))), c))
    capped_qk = qk

    bias = _attention_bias(imp, node, a, q_len, total, past_len, nonpad)
    scores_shape = (batch, q_heads, q_len, total)
    if bias is not None:
        if imp.has(node, 3) and _broadcast(_shape(bias), scores_shape) != scores_shape:
            raise imp.error(
                f"attn_mask of shape {list(imp.shape(node.input[3]))} does not broadcast to "
                f"[batch, q_heads, q_len, total_len] = {list(scores_shape)}"
            )
        qk = imp.op(g.AddOp(qk, _ssa(imp, bias)))

    precision = a.get("softmax_precision")
    if precision is not None and int(precision) not in _SOFTMAX_PRECISIONS:
        named = int(precision) in onnx.TensorProto.DataType.values()
        raise imp.error(
            f"softmax_precision {type_name(int(precision)) if named else precision} is not "
            "supported (FLOAT or DOUBLE: the softmax is computed in float32)"
        )
    probs = imp.op(g.SoftmaxOp(qk, axis=3))
    masked_rows = _fully_masked_rows(imp, bias)
    if masked_rows is not None:
        probs = imp.op(g.WhereOp(_ssa(imp, masked_rows), imp.scalar(0.0), probs))

    y = _ungrouped(imp, imp.op(g.MatmulOp(_grouped(imp, probs, kv_heads), v)), q_heads)
    if rank == 3:
        y = imp.op(g.TransposeOp(y, perm=[0, 2, 1, 3]))
        y = imp.op(g.ReshapeOp(y, [batch, q_len, q_heads * v_head]))

    mode = int(a.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise imp.error(f"qk_matmul_output_mode must be 0, 1, 2 or 3, got {mode}")
    qk_out = (raw_qk, capped_qk, qk, probs)[mode]
    outs: list[Value] = [y, present_key, present_value, qk_out]
    return outs[: len(node.output)]


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _attention_bias(
    imp: Importer,
    node: onnx.NodeProto,
    a: dict,
    q_len: int,
    total: int,
    past_len: int,
    nonpad: Value | None,
) -> Value | None:
    """The additive bias of the scores (0 / -inf, plus a float attn_mask), broadcastable to
    [batch, q_heads, q_len, total]; None when nothing is masked. Allowed positions are combined
    as one bool mask first: the attn_mask (bool), the causal frontier and sliding window of the
    query's offset (the past length, or per batch nonpad_kv_seqlen - q_len for an external
    cache) and the padding beyond nonpad_kv_seqlen."""
    allowed: Value | None = None
    float_mask: Value | None = None
    if imp.has(node, 3):
        m = imp.lookup(node.input[3])
        mshape = _shape(m)
        el = element_type_of(m) if isinstance(m, SSAValue) else None
        is_bool = el == i1 if el is not None else np.asarray(m).dtype == np.bool_
        is_float = el == f32 if el is not None else np.issubdtype(np.asarray(m).dtype, np.floating)
        if not (is_bool or is_float):
            raise imp.error(f"attn_mask must be bool or float, got {el or np.asarray(m).dtype}")
        if not mshape or mshape[-1] > total or len(mshape) > 4:
            raise imp.error(
                f"attn_mask of shape {list(mshape)} must have rank 1 to 4 and a last dim of at "
                f"most the total sequence length {total}"
            )
        if is_bool:
            allowed = _pad_last(imp, m, total, np.array(False))
        else:
            if isinstance(m, np.ndarray):
                m = m.astype(np.float32)
            float_mask = _pad_last(imp, m, total, np.array(NEG_INF))

    # offset: the count of keys before the query block, static or [batch, 1, 1, 1] at run time
    offset: Value = np.array(past_len, dtype=np.int64)
    if nonpad is not None:
        offset = (
            nonpad - q_len
            if isinstance(nonpad, np.ndarray)
            else imp.op(g.SubOp(nonpad, imp.scalar(q_len, like=nonpad)))
        )
    # key index minus query index, [q_len, total]
    rel = np.arange(total, dtype=np.int64)[None, :] - np.arange(q_len, dtype=np.int64)[:, None]
    if a.get("is_causal", 0):
        allowed = _and(imp, allowed, _le(imp, rel, offset))  # j <= i + offset
    left, right = int(a.get("left_window_size", -1)), int(a.get("right_window_size", -1))
    for name, size in (("left_window_size", left), ("right_window_size", right)):
        if size < -1:
            raise imp.error(f"{name} must be -1 (unbounded) or nonnegative, got {size}")
    if left >= 0:  # i + offset - j <= left
        allowed = _and(imp, allowed, _le(imp, offset, rel + left))
    if right >= 0:  # j - (i + offset) <= right
        allowed = _and(imp, allowed, _le(imp, rel - right, offset))
    if nonpad is not None:  # keys past nonpad_kv_seqlen are padding: j < nonpad <=> j + 1 <= nonpad
        allowed = _and(imp, allowed, _le(imp, np.arange(1, total + 1, dtype=np.int64), nonpad))

    if allowed is None:
        return float_mask
    if isinstance(allowed, np.ndarray):
        bias: Value = np.where(allowed, np.float32(0), NEG_INF).astype(np.float32)
    else:
        bias = imp.op(g.WhereOp(allowed, imp.scalar(0.0), imp.scalar(float(NEG_INF))))
    if float_mask is None:
        return bias
    if isinstance(bias, np.ndarray) and isinstance(float_mask, np.ndarray):
        return bias + float_mask
    return imp.op(g.AddOp(_ssa(imp, float_mask), _ssa(imp, bias)))


def _fully_masked_rows(imp: Importer, bias: Value | None) -> Value | None:
    """Where a bias row is entirely -inf (its softmax would be NaN): known at import time when
    the bias is (None if no row is), else computed."""
    if bias is None:
        return None
    if isinstance(bias, np.ndarray):
        rows = np.isneginf(bias.max(axis=-1, keepdims=True))
        return rows if rows.any() else None
    rank = len(imp.shape_of(bias))
    row_max = imp.op(g.ReduceMaxOp(bias, axes=[rank - 1], keepdims=1))
    return imp.op(g.EqualOp(row_max, imp.scalar(float(NEG_INF))))


# ----------------------------------------------------------------------------- rotary


def _last_slice(imp: Importer, x: SSAValue, start: int, end: int, step: int = 1) -> SSAValue:
    shape = imp.shape_of(x)
    n = len(shape)
    return imp.op(
        g.SliceOp(
            x,
            starts=[0] * (n - 1) + [start],
            ends=list(shape[:-1]) + [end],
            steps=[1] * (n - 1) + [step],
        )
    )


@converter("RotaryEmbedding")
def convert_rotary_embedding(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Rotary position embedding: the first rotary_embedding_dim features of each head are
    taken as pairs (x1, x2) (halves, or even/odd features when interleaved) and rotated by the
    position's angle, (x1 cos - x2 sin, x1 sin + x2 cos); cos and sin come from the caches,
    gathered by position_ids when given."""
    a = attrs(node)
    x = imp.value(node.input[0])
    if element_type_of(x) != f32:
        raise imp.error(f"input must be a float32 tensor, got {element_type_of(x)}")
    shape = imp.shape_of(x)
    interleaved = int(a.get("interleaved", 0))
    num_heads = int(a.get("num_heads", 0))
    if len(shape) == 4:
        batch, heads, seq, head = shape
        if num_heads and num_heads != heads:
            raise imp.error(f"num_heads={num_heads} disagrees with the 4-D input's {heads} heads")
    elif len(shape) == 3:
        batch, seq, hidden = shape
        if num_heads <= 0:
            raise imp.error("a 3-D input [batch, seq, hidden] needs the num_heads attribute")
        if hidden % num_heads:
            raise imp.error(f"hidden size {hidden} is not a multiple of num_heads={num_heads}")
        head = hidden // num_heads
        x = imp.op(g.ReshapeOp(x, [batch, seq, num_heads, head]))
    else:
        raise imp.error(f"input must be 3-D or 4-D, got shape {list(shape)}")
    rot = int(a.get("rotary_embedding_dim", 0)) or head
    if rot > head or rot % 2 or rot < 0:
        raise imp.error(f"rotary_embedding_dim={rot} must be even and at most the head size {head}")
    half = rot // 2

    caches = []
    for i, what in ((1, "cos_cache"), (2, "sin_cache")):
        c = imp.lookup(node.input[i])
        if imp.has(node, 3):
            pos = imp.lookup(node.input[3])
            if _shape(pos) != (batch, seq):
                raise imp.error(f"position_ids must have shape [{batch}, {seq}], got {_shape(pos)}")
            if len(_shape(c)) != 2:
                raise imp.error(f"{what} must be 2-D [max_position, {half}] with position_ids")
            if isinstance(c, np.ndarray) and isinstance(pos, np.ndarray):
                c = c[pos]
            else:
                c = imp.op(g.GatherOp(_ssa(imp, c), _ssa(imp, pos), axis=0))
        if _shape(c) != (batch, seq, half):
            raise imp.error(
                f"{what} must give [batch, seq, rotary_embedding_dim / 2] = "
                f"{[batch, seq, half]} values, got {list(_shape(c))}"
            )
        c = _ssa(imp, c)
        if element_type_of(c) != f32:
            raise imp.error(f"{what} must be float32, got {element_type_of(c)}")
        # broadcast over heads: [b, 1, s, half] against [b, h, s, d], [b, s, 1, half] for 3-D
        caches.append(imp.op(g.UnsqueezeOp(c, axes=[1 if len(shape) == 4 else 2])))
    cos, sin = caches

    rotated = _last_slice(imp, x, 0, rot) if rot < head else x
    if interleaved:
        x1 = _last_slice(imp, rotated, 0, rot, 2)
        x2 = _last_slice(imp, rotated, 1, rot, 2)
    else:
        x1 = _last_slice(imp, rotated, 0, half)
        x2 = _last_slice(imp, rotated, half, rot)
    real = imp.op(g.SubOp(imp.op(g.MulOp(cos, x1)), imp.op(g.MulOp(sin, x2))))
    imag = imp.op(g.AddOp(imp.op(g.MulOp(sin, x1)), imp.op(g.MulOp(cos, x2))))
    last = len(imp.shape_of(real)) - 1
    if interleaved:
        pairs = [imp.op(g.UnsqueezeOp(t, axes=[last + 1])) for t in (real, imag)]
        joined = imp.op(g.ConcatOp(pairs, axis=last + 1))
        out = imp.op(g.ReshapeOp(joined, imp.shape_of(rotated)))
    else:
        out = imp.op(g.ConcatOp([real, imag], axis=last))
    if rot < head:
        out = imp.op(g.ConcatOp([out, _last_slice(imp, x, rot, head)], axis=last))
    if len(shape) == 3:
        out = imp.op(g.ReshapeOp(out, shape))
    return [out]
