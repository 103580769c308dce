"""Transformer models built from configs with seeded random weights, no downloads (issue 30).

Each is written with onnx.helper the way transformers' ONNX exports spell it: symbolic `batch`
and `seq` dims, the sizes read back with Shape/Gather, positions from Range, the causal mask
from Range/LessOrEqual/Where, multi-head reshapes through Concat'ed shape vectors. Decoders
may take a KV cache: inputs `past_key_values.{i}.key|value` ([batch, kv_heads, past, head_dim],
`past` symbolic, 0 for the prefill) and outputs `present.{i}.key|value` (past + seq long),
optimum's layout.

- gpt2: learned positions, LayerNorm, one fused QKV projection with bias, tanh-GELU, tied-shape
  LM head.
- llama: RMSNorm, rotary embeddings, grouped-query attention (repeat_kv as Expand + Reshape),
  SiLU-gated MLP, no biases.
- qwen2: llama with biases on the Q, K and V projections.
- bert: encoder, token-type embeddings, LayerNorm, exact GELU (Erf), additive padding mask
  from an `attention_mask` input.
- t5: T5's encoder: relative-position bias from log-spaced buckets (shared by the layers),
  RMS norm without mean or bias, ReLU feed-forward, scores not scaled by 1/sqrt(d).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


@dataclass(frozen=True)
class Config:
    kind: str  # gpt2 | llama | qwen2 | bert | t5
    vocab: int = 1000
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int | None = None  # grouped-query attention when fewer than heads
    ffn: int = 128
    positions: int = 1024
    kv_cache: bool = False
    eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def n_kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def decoder(self) -> bool:
        return self.kind not in ("bert", "t5")


SMALL = {
    "gpt2": Config("gpt2"),
    "llama": Config("llama", kv_heads=2),
    "qwen2": Config("qwen2", kv_heads=2, eps=1e-6, rope_theta=1e6),
    "bert": Config("bert", eps=1e-12),
    "t5": Config("t5", eps=1e-6),
}
"""Test-sized models (64 wide, 2 layers)."""

FULL = {
    "gpt2": Config("gpt2", vocab=50257, hidden=768, layers=12, heads=12, ffn=3072),
    "llama": Config(
        "llama", vocab=32000, hidden=1024, layers=8, heads=16, kv_heads=4, ffn=2816, eps=1e-6
    ),
    "qwen2": Config(
        "qwen2",
        vocab=32000,
        hidden=896,
        layers=8,
        heads=14,
        kv_heads=2,
        ffn=4864,
        eps=1e-6,
        rope_theta=1e6,
    ),  # fmt: skip
    "bert": Config("bert", vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, eps=1e-12),
    "t5": Config("t5", vocab=32128, hidden=512, layers=6, heads=8, ffn=2048, eps=1e-6),
}
"""Benchmark-sized models: GPT-2 small and BERT-base as published; the Llama and Qwen2 shapes
cut to 8 layers (TinyLlama's and Qwen2-0.5B's widths) to keep their random weights small."""


class _Builder:
    """Nodes, initializers and fresh names for one graph."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def op(self, op_type: str, *inputs: str, n_out: int = 1, **attrs) -> str | list[str]:
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def __call__(self, op_type: str, *inputs: str, **attrs) -> str:
        out = self.op(op_type, *inputs, **attrs)
        assert isinstance(out, str)
        return out

    def const(self, value, dtype=np.float32, hint: str = "const") -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(list(values), np.int64, "shape")

    def weight(self, shape: tuple[int, ...], hint: str, scale: float = 0.02) -> str:
        return self.const(self.rng.standard_normal(shape) * scale, hint=hint)

    def near_one(self, n: int, hint: str) -> str:
        return self.const(1.0 + 0.1 * self.rng.standard_normal(n), hint=hint)

    def linear(self, x: str, n_in: int, n_out: int, bias: bool, hint: str) -> str:
        y = self("MatMul", x, self.weight((n_in, n_out), f"{hint}.weight"))
        return self("Add", y, self.weight((n_out,), f"{hint}.bias")) if bias else y

    def dim(self, shape: str, axis: int) -> str:
        """A 1-element int64 vector: shape[axis] (what exporters Gather then Unsqueeze)."""
        return self("Unsqueeze", self.scalar_dim(shape, axis), self.ints(0))

    def scalar_dim(self, shape: str, axis: int) -> str:
        return self("Gather", shape, self.const(axis, np.int64, "axis"), axis=0)


def _layer_norm(b: _Builder, x: str, cfg: Config, hint: str) -> str:
    if cfg.kind in ("gpt2", "bert"):
        return b(
            "LayerNormalization",
            x,
            b.near_one(cfg.hidden, f"{hint}.weight"),
            b.weight((cfg.hidden,), f"{hint}.bias"),
            axis=-1,
            epsilon=cfg.eps,
        )
    # RMSNorm as transformers' LlamaRMSNorm exports it
    var = b("ReduceMean", b("Pow", x, b.const(2.0)), axes=[-1], keepdims=1)
    inv = b("Reciprocal", b("Sqrt", b("Add", var, b.const(cfg.eps))))
    return b("Mul", b.near_one(cfg.hidden, f"{hint}.weight"), b("Mul", x, inv))


def _gelu_tanh(b: _Builder, x: str) -> str:
    cube = b("Mul", b("Pow", x, b.const(3.0)), b.const(0.044715))
    inner = b("Mul", b("Add", x, cube), b.const(np.sqrt(2.0 / np.pi)))
    return b("Mul", b("Mul", x, b.const(0.5)), b("Add", b("Tanh", inner), b.const(1.0)))


def _gelu_erf(b: _Builder, x: str) -> str:
    erf = b("Erf", b("Div", x, b.const(np.sqrt(2.0))))
    return b("Mul", b("Mul", x, b("Add", erf, b.const(1.0))), b.const(0.5))


def _split_heads(b: _Builder, x: str, batch: str, seq: str, heads: int, hd: int) -> str:
    """[batch, seq, heads*hd] -> [batch, heads, seq, hd]."""
    shape = b("Concat", batch, seq, b.ints(heads), b.ints(hd), axis=0)
    return b("Transpose", b("Reshape", x, shape), perm=[0, 2, 1, 3])


def _rotate(b: _Builder, x: str, cos: str, sin: str, hd: int) -> str:
    """x * cos + rotate_half(x) * sin (transformers' apply_rotary_pos_emb)."""
    half = hd // 2
    x1 = b("Slice", x, b.ints(0), b.ints(half), b.ints(-1))
    x2 = b("Slice", x, b.ints(half), b.ints(hd), b.ints(-1))
    rotated = b("Concat", b("Neg", x2), x1, axis=-1)
    return b("Add", b("Mul", x, cos), b("Mul", rotated, sin))


def _repeat_kv(b: _Builder, x: str, cfg: Config, batch: str, total: str) -> str:
    """[batch, kv, total, hd] -> [batch, heads, total, hd] (Expand + Reshape, as repeat_kv)."""
    rep = cfg.heads // cfg.n_kv
    if rep == 1:
        return x
    hd = cfg.head_dim
    expanded_shape = b("Concat", batch, b.ints(cfg.n_kv), b.ints(rep), total, b.ints(hd), axis=0)
    expanded = b("Expand", b("Unsqueeze", x, b.ints(2)), expanded_shape)
    return b("Reshape", expanded, b("Concat", batch, b.ints(cfg.heads), total, b.ints(hd), axis=0))


def _attention(b, x, cfg, i, batch, seq, total, mask, rope, past):
    """One self-attention block; returns (output, present key, present value)."""
    hd, hint = cfg.head_dim, f"layers.{i}.attn"
    if cfg.kind in ("gpt2", "bert"):
        if cfg.kind == "gpt2":
            qkv = b.linear(x, cfg.hidden, 3 * cfg.hidden, True, f"{hint}.c_attn")
            q, k, v = b.op(
                "Split", qkv, b.ints(cfg.hidden, cfg.hidden, cfg.hidden), axis=-1, n_out=3
            )
        else:
            q, k, v = (b.linear(x, cfg.hidden, cfg.hidden, True, f"{hint}.{p}") for p in "qkv")
    else:
        bias = cfg.kind == "qwen2"
        q = b.linear(x, cfg.hidden, cfg.heads * hd, bias, f"{hint}.q_proj")
        k = b.linear(x, cfg.hidden, cfg.n_kv * hd, bias, f"{hint}.k_proj")
        v = b.linear(x, cfg.hidden, cfg.n_kv * hd, bias, f"{hint}.v_proj")
    q = _split_heads(b, q, batch, seq, cfg.heads, hd)
    k = _split_heads(b, k, batch, seq, cfg.n_kv, hd)
    v = _split_heads(b, v, batch, seq, cfg.n_kv, hd)
    if rope is not None:
        q, k = _rotate(b, q, *rope, hd), _rotate(b, k, *rope, hd)
    if past is not None:
        k = b("Concat", past[0], k, axis=2)
        v = b("Concat", past[1], v, axis=2)
    present = (k, v)
    k, v = _repeat_kv(b, k, cfg, batch, total), _repeat_kv(b, v, cfg, batch, total)
    scores = b("MatMul", q, b("Transpose", k, perm=[0, 1, 3, 2]))
    if cfg.kind != "t5":  # T5 folds the 1/sqrt(d) into its initialization
        scores = b("Div", scores, b.const(np.sqrt(hd)))
    scores = b("Add", scores, mask)
    ctx = b("MatMul", b("Softmax", scores, axis=-1), v)
    ctx = b("Transpose", ctx, perm=[0, 2, 1, 3])
    ctx = b("Reshape", ctx, b("Concat", batch, seq, b.ints(cfg.heads * hd), axis=0))
    name = "c_proj" if cfg.kind == "gpt2" else "o_proj"
    out = b.linear(ctx, cfg.heads * hd, cfg.hidden, cfg.kind in ("gpt2", "bert"), f"{hint}.{name}")
    return out, present


def _mlp(b: _Builder, x: str, cfg: Config, i: int) -> str:
    hint = f"layers.{i}.mlp"
    if cfg.kind == "t5":  # DenseReluDense
        h = b("Relu", b.linear(x, cfg.hidden, cfg.ffn, False, f"{hint}.wi"))
        return b.linear(h, cfg.ffn, cfg.hidden, False, f"{hint}.wo")
    if cfg.kind in ("gpt2", "bert"):
        h = b.linear(x, cfg.hidden, cfg.ffn, True, f"{hint}.fc")
        h = _gelu_tanh(b, h) if cfg.kind == "gpt2" else _gelu_erf(b, h)
        return b.linear(h, cfg.ffn, cfg.hidden, True, f"{hint}.proj")
    gate = b.linear(x, cfg.hidden, cfg.ffn, False, f"{hint}.gate_proj")
    up = b.linear(x, cfg.hidden, cfg.ffn, False, f"{hint}.up_proj")
    act = b("Mul", b("Mul", gate, b("Sigmoid", gate)), up)
    return b.linear(act, cfg.ffn, cfg.hidden, False, f"{hint}.down_proj")


T5_BUCKETS, T5_MAX_DISTANCE = 32, 128


def _t5_position_bias(b: _Builder, cfg: Config, slots: str) -> str:
    """T5's bidirectional relative-position bias, [1, heads, seq, seq], as its export computes it:
    half the buckets per direction, exact below 8, logarithmic up to 128 (the log of 0 at the
    diagonal is computed and discarded by the Where, as in transformers)."""
    half = T5_BUCKETS // 2
    exact = half // 2
    rel = b("Sub", b("Unsqueeze", slots, b.ints(0)), b("Unsqueeze", slots, b.ints(1)))  # k - q
    direction = b(
        "Mul",
        b("Cast", b("Greater", rel, b.const(0, np.int64, "zero")), to=TensorProto.INT64),
        b.const(half, np.int64, "half"),
    )
    n = b("Abs", b("Cast", rel, to=TensorProto.FLOAT))
    scale = (half - exact) / np.log(T5_MAX_DISTANCE / exact)
    large = b(
        "Add",
        b("Mul", b("Log", b("Div", n, b.const(float(exact)))), b.const(scale)),
        b.const(float(exact)),
    )
    large = b("Min", b("Cast", large, to=TensorProto.INT64), b.const(half - 1, np.int64, "last"))
    small = b("Less", n, b.const(float(exact)))
    bucket = b("Add", direction, b("Where", small, b("Cast", n, to=TensorProto.INT64), large))
    table = b.weight((T5_BUCKETS, cfg.heads), "relative_attention_bias", scale=1.0)
    bias = b("Transpose", b("Gather", table, bucket), perm=[2, 0, 1])  # [heads, q, k]
    return b("Unsqueeze", bias, b.ints(0))


def _rope_tables(b: _Builder, cfg: Config, positions: str) -> tuple[str, str]:
    """cos and sin, [batch or 1, 1, seq, head_dim], of the positions ([batch or 1, seq])."""
    hd = cfg.head_dim
    inv_freq = 1.0 / cfg.rope_theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    pos = b("Unsqueeze", b("Cast", positions, to=TensorProto.FLOAT), b.ints(-1))
    freqs = b("Mul", pos, b.const(inv_freq))
    emb = b("Unsqueeze", b("Concat", freqs, freqs, axis=-1), b.ints(1))
    return b("Cos", emb), b("Sin", emb)


def build(cfg: Config, seed: int = 0) -> onnx.ModelProto:
    """The model of `cfg` with seeded random weights (see the module docstring)."""
    b = _Builder(seed)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    outputs = []
    ids_shape = b("Shape", "input_ids")
    batch, seq = b.dim(ids_shape, 0), b.dim(ids_shape, 1)
    past_names: list[tuple[str, str]] = []
    if cfg.kv_cache:
        kv_shape = ["batch", cfg.n_kv, "past", cfg.head_dim]
        for i in range(cfg.layers):
            pair = (f"past_key_values.{i}.key", f"past_key_values.{i}.value")
            past_names.append(pair)
            inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, kv_shape) for n in pair]
        past_len = b.scalar_dim(b("Shape", past_names[0][0]), 2)
    else:
        past_len = b.const(0, np.int64, "zero")
    seq_len = b.scalar_dim(ids_shape, 1)
    total_len = b("Add", past_len, seq_len)
    total = b("Unsqueeze", total_len, b.ints(0))
    slots = b("Range", past_len, total_len, b.const(1, np.int64, "one"))  # the queries' slots
    positions = b("Unsqueeze", slots, b.ints(0))  # [1, seq]
    if cfg.kv_cache:  # optimum's layout: a padding mask over past + seq, explicit positions
        inputs.append(
            helper.make_tensor_value_info(
                "attention_mask", TensorProto.INT64, ["batch", "past + seq"]
            )
        )
        inputs.append(
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])
        )
        positions = "position_ids"

    h = b("Gather", b.weight((cfg.vocab, cfg.hidden), "embed_tokens"), "input_ids")
    rope = None
    if cfg.kind in ("gpt2", "bert"):
        pos_table = b.weight((cfg.positions, cfg.hidden), "embed_positions")
        h = b("Add", h, b("Gather", pos_table, positions))
    elif cfg.kind != "t5":
        rope = _rope_tables(b, cfg, positions)
    if cfg.kind == "t5":
        inputs.append(
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
        )
        keep = b("Cast", b("Unsqueeze", "attention_mask", b.ints(1, 2)), to=TensorProto.FLOAT)
        padding = b("Mul", b("Sub", b.const(1.0), keep), b.const(np.finfo(np.float32).min))
        mask = b("Add", _t5_position_bias(b, cfg, slots), padding)
    elif cfg.kind == "bert":
        inputs.append(
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
        )
        types = b.weight((2, cfg.hidden), "token_type_embeddings")
        h = b("Add", h, b("Gather", types, b.const(0, np.int64, "token_type")))
        h = _layer_norm(b, h, cfg, "embeddings.norm")
        keep = b("Cast", b("Unsqueeze", "attention_mask", b.ints(1, 2)), to=TensorProto.FLOAT)
        mask = b("Mul", b("Sub", b.const(1.0), keep), b.const(np.finfo(np.float32).min))
    else:  # causal: key slot <= query slot (and, with a cache, not masked out)
        q_slot = b("Unsqueeze", slots, b.ints(1))
        zero, one = b.const(0, np.int64, "zero"), b.const(1, np.int64, "one")
        k_slot = b("Unsqueeze", b("Range", zero, total_len, one), b.ints(0))
        allowed = b("LessOrEqual", k_slot, q_slot)  # [seq, total]
        if cfg.kv_cache:
            keep = b("Cast", b("Unsqueeze", "attention_mask", b.ints(1, 2)), to=TensorProto.BOOL)
            allowed = b("And", allowed, keep)  # [batch, 1, seq, total]
        mask = b("Where", allowed, b.const(0.0), b.const(np.finfo(np.float32).min))

    for i in range(cfg.layers):
        past = past_names[i] if cfg.kv_cache else None
        if cfg.kind == "t5":  # pre-norm, no cache
            attn, _ = _attention(
                b, _layer_norm(b, h, cfg, f"layers.{i}.ln_1"), cfg, i, batch, seq, total, mask,
                None, None,
            )  # fmt: skip
            h = b("Add", h, attn)
            h = b("Add", h, _mlp(b, _layer_norm(b, h, cfg, f"layers.{i}.ln_2"), cfg, i))
            continue
        if cfg.kind == "bert":  # post-norm
            attn, _ = _attention(b, h, cfg, i, batch, seq, total, mask, rope, past)
            h = _layer_norm(b, b("Add", h, attn), cfg, f"layers.{i}.attn_norm")
            h = _layer_norm(b, b("Add", h, _mlp(b, h, cfg, i)), cfg, f"layers.{i}.mlp_norm")
            continue
        attn, present = _attention(
            b,
            _layer_norm(b, h, cfg, f"layers.{i}.ln_1"),
            cfg,
            i,
            batch,
            seq,
            total,
            mask,
            rope,
            past,
        )
        h = b("Add", h, attn)
        h = b("Add", h, _mlp(b, _layer_norm(b, h, cfg, f"layers.{i}.ln_2"), cfg, i))
        if cfg.kv_cache:
            for name, value in zip((f"present.{i}.key", f"present.{i}.value"), present):
                b.nodes.append(helper.make_node("Identity", [value], [name]))
                outputs.append(
                    helper.make_tensor_value_info(
                        name, TensorProto.FLOAT, ["batch", cfg.n_kv, "past + seq", cfg.head_dim]
                    )
                )
    if cfg.kind == "t5":
        h = _layer_norm(b, h, cfg, "final_layer_norm")
    if cfg.decoder:
        h = _layer_norm(b, h, cfg, "norm")
        logits = b("MatMul", h, b.weight((cfg.hidden, cfg.vocab), "lm_head"))
        b.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
        first = helper.make_tensor_value_info(
            "logits", TensorProto.FLOAT, ["batch", "seq", cfg.vocab]
        )
    else:
        b.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
        first = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", cfg.hidden]
        )
    graph = helper.make_graph(b.nodes, cfg.kind, inputs, [first, *outputs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def feeds(cfg: Config, batch: int, seq: int, past: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """Token ids (and a padding mask, a past cache) for one call."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {
        "input_ids": rng.integers(0, cfg.vocab, (batch, seq), dtype=np.int64)
    }
    if cfg.kind in ("bert", "t5"):
        mask = np.ones((batch, seq), np.int64)
        mask[0, seq - seq // 4 :] = 0  # some padding in the first row
        out["attention_mask"] = mask
    if cfg.kv_cache:
        out["attention_mask"] = np.ones((batch, past + seq), np.int64)
        out["position_ids"] = np.tile(np.arange(past, past + seq, dtype=np.int64), (batch, 1))
        for i in range(cfg.layers):
            for part in ("key", "value"):
                shape = (batch, cfg.n_kv, past, cfg.head_dim)
                out[f"past_key_values.{i}.{part}"] = rng.standard_normal(shape).astype(np.float32)
    return out


def with_cache(cfg: Config) -> Config:
    return replace(cfg, kv_cache=True)


def specialized(model: onnx.ModelProto, **dims: int) -> onnx.ModelProto:
    """A copy with the named symbolic input dims fixed (batch=1, seq=128, past=0 ...), for tools
    that take static shapes (`ziggurat bench DIR`)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for vi in out.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    for vi in out.graph.output:
        vi.type.tensor_type.ClearField("shape")
    return out


def onnxruntime_greedy(
    model: onnx.ModelProto, cfg: Config, prompt: np.ndarray, n: int
) -> np.ndarray:
    """Greedy decoding as a user of onnxruntime writes it: the past grows one slot per call."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    batch = prompt.shape[0]
    past = {
        f"past_key_values.{i}.{part}": np.zeros((batch, cfg.n_kv, 0, cfg.head_dim), np.float32)
        for i in range(cfg.layers)
        for part in ("key", "value")
    }
    ids, used, tokens = prompt, 0, []
    for _ in range(n):
        seq = ids.shape[1]
        feeds = {
            "input_ids": ids,
            "attention_mask": np.ones((batch, used + seq), np.int64),
            "position_ids": np.tile(np.arange(used, used + seq), (batch, 1)),
            **past,
        }
        outs = dict(zip(names, sess.run(None, feeds), strict=True))
        token = outs["logits"][:, -1].argmax(-1)
        tokens.append(token)
        used += seq
        ids = token[:, None].astype(np.int64)
        past = {p: outs[p.replace("past_key_values.", "present.")] for p in past}
    return np.stack(tokens, axis=1)
