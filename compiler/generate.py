"""Greedy token generation with a KV cache of fixed capacity, over two compiled programs.

A decoder exported with a KV cache (optimum's layout: inputs `input_ids`, `attention_mask`
over past + new tokens, `position_ids`, and `past_key_values.{i}.key|value` whose
axis 2 is the past length; outputs `logits` first and `present.{i}.key|value`) grows its
cache by one slot per token. The static-shape pipeline compiles one length, so the cache is
given a fixed capacity C instead, as HF's StaticCache and onnxruntime-genai's shared
past/present buffer do: every call sees past + new = C slots, the real tokens right-aligned,
the empty slots on the left masked out by `attention_mask` (a masked score is the float
minimum, whose exp is exactly 0) and the positions given by `position_ids`, so the logits are
those of the unpadded model. Two programs serve a whole generation: the prefill (prompt
capacity P, past C - P; a shorter prompt is left-padded and masked the same way) and the step
(one token, past C - 1); after each call the cache moves one slot
left (the slot dropped is empty while the tokens fit). Both go through the compile cache, so a
second generation of the same shapes compiles nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.compile_cache import cached_compile
from compiler.errors import ZigguratError
from compiler.frontend.onnx import load_model
from compiler.frontend.symbolic_shapes import analyze

PAST_AXIS = 2
"""The past-length axis of a cache tensor ([batch, kv_heads, past, head_dim])."""


class GenerateError(ZigguratError):
    """The model does not have the inputs and outputs a KV-cache decoder needs."""


@dataclass(frozen=True)
class CacheLayout:
    """Which inputs and outputs of a decoder carry the cache, read from the model."""

    past: list[str]  # past_key_values.{i}.key|value, in input order
    present: list[str]  # present.{i}.key|value, same order
    cache_dims: dict[str, list[int]]  # the static dims of each past input (past axis: -1)

    @staticmethod
    def of(model: Any) -> CacheLayout:
        graph = model.graph
        inits = {t.name for t in graph.initializer}
        inputs = {i.name: i for i in graph.input if i.name not in inits}
        outputs = [o.name for o in graph.output]
        for need in ("input_ids", "attention_mask", "position_ids"):
            if need not in inputs:
                raise GenerateError(
                    f"model has no '{need}' input: KV-cache generation needs input_ids, an "
                    "attention_mask over past + new tokens and position_ids (optimum's "
                    "decoder-with-past layout; positions a model computes from the cache's "
                    "length would count its empty slots)"
                )
        past = [n for n in inputs if n.startswith("past_key_values.")]
        if not past:
            raise GenerateError(
                "model has no past_key_values.* inputs: it was exported without a KV cache"
            )
        present = [n.replace("past_key_values.", "present.", 1) for n in past]
        missing = [n for n in present if n not in outputs]
        if missing:
            raise GenerateError(
                f"model has no output {missing[0]!r} for input {past[present.index(missing[0])]!r}"
            )
        if not outputs or outputs[0] != "logits":
            raise GenerateError(f"the model's first output must be 'logits', got {outputs[:1]}")
        dims: dict[str, list[int]] = {}
        for name in past:
            shape = inputs[name].type.tensor_type.shape.dim
            if len(shape) != 4:
                raise GenerateError(
                    f"input '{name}' has rank {len(shape)}; expected [batch, kv_heads, past, head_dim]"
                )
            d = [x.dim_value if x.HasField("dim_value") else -1 for x in shape]
            if d[1] <= 0 or d[3] <= 0:
                raise GenerateError(
                    f"input '{name}': kv_heads and head_dim must be static, got {d}"
                )
            dims[name] = d
        return CacheLayout(past, present, dims)

    def shapes(self, batch: int, seq: int, capacity: int) -> dict[str, list[int]]:
        """input_shapes of the program that takes `seq` new tokens with the cache full to C."""
        out = {
            "input_ids": [batch, seq],
            "attention_mask": [batch, capacity],
            "position_ids": [batch, seq],
        }
        for name in self.past:
            d = self.cache_dims[name]
            out[name] = [batch, d[1], capacity - seq, d[3]]
        return out


def prompt_bucket(length: int, smallest: int = 8) -> int:
    """The prompt capacity a prompt of `length` tokens is compiled for: the next power of two
    (at least `smallest`), so that prompts of many lengths share two compiled programs."""
    return max(smallest, 1 << max(0, length - 1).bit_length())


class GreedyGenerator:
    """Greedy decoding of `model` for prompts of up to `prompt_len` tokens and `new_tokens`
    new ones, batch `batch`: `generate(prompts)` -> the new token ids.

    A shorter prompt is left-padded inside the prompt's slots and masked like the empty cache
    slots (its positions still start at 0), so one pair of programs serves every prompt length
    up to `prompt_len`, and the rows of a batch may differ in length."""

    def __init__(
        self,
        model: str | Path | Any,
        prompt_len: int,
        new_tokens: int,
        batch: int = 1,
        threads: int = 1,
        cache: bool = True,
        compile_fn: Callable[..., Any] | None = None,
    ) -> None:
        if prompt_len < 1 or new_tokens < 1 or batch < 1:
            raise GenerateError(
                f"prompt length, new tokens and batch must be at least 1, got {prompt_len}, "
                f"{new_tokens}, {batch}"
            )
        proto = load_model(model)
        self.layout = CacheLayout.of(proto)
        self.prompt_len, self.new_tokens, self.batch = prompt_len, new_tokens, batch
        self.capacity = prompt_len + new_tokens
        for limit in analyze(proto.graph).input_limits:  # before any compile
            if limit.name == "position_ids" and self.capacity > limit.extent:
                raise GenerateError(
                    f"{new_tokens} new tokens after a prompt of up to {prompt_len} need "
                    f"positions up to {self.capacity - 1}, beyond what the model allows: "
                    f"{limit.reason}"
                )
        build = compile_fn or (
            lambda shapes: cached_compile(proto, shapes, threads=threads, cache=cache)
        )
        self.prefill = build(self.layout.shapes(batch, prompt_len, self.capacity))
        self.step = build(self.layout.shapes(batch, 1, self.capacity))

    def _feeds(
        self, ids: np.ndarray, real: np.ndarray, cache: dict[str, np.ndarray]
    ) -> dict[str, Any]:
        """The feeds for the new tokens `ids` ([batch, seq], right-aligned) when row r uses its
        last `real[r]` slots (these tokens included)."""
        seq = ids.shape[1]
        slots = np.arange(self.capacity)
        mask = (slots[None, :] >= self.capacity - real[:, None]).astype(np.int64)
        positions = real[:, None] - seq + np.arange(seq)[None, :]
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "position_ids": np.maximum(positions, 0).astype(np.int64),  # a padded slot's: 0
            **cache,
        }

    def _prompts(
        self, prompts: np.ndarray | Sequence[Sequence[int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """[batch, prompt_len] token ids, each row's prompt right-aligned, and the lengths."""
        rows = [np.asarray(r, dtype=np.int64).reshape(-1) for r in prompts]
        if len(rows) != self.batch:
            raise GenerateError(f"{len(rows)} prompts given; this generator takes {self.batch}")
        ids = np.zeros((self.batch, self.prompt_len), np.int64)
        for r, row in enumerate(rows):
            if not 1 <= len(row) <= self.prompt_len:
                raise GenerateError(
                    f"prompt {r} has {len(row)} tokens; this generator takes 1 to {self.prompt_len}"
                )
            ids[r, self.prompt_len - len(row) :] = row
        return ids, np.array([len(r) for r in rows], np.int64)

    def generate(self, prompts: np.ndarray | Sequence[Sequence[int]]) -> np.ndarray:
        """The `new_tokens` greedy continuations of each prompt (a [batch, length] array, or
        one sequence of token ids per row), [batch, new_tokens] int64."""
        ids, real = self._prompts(prompts)
        cache = {}
        for name in self.layout.past:
            d = self.layout.cache_dims[name]
            shape = (self.batch, d[1], self.capacity - self.prompt_len, d[3])
            cache[name] = np.zeros(shape, np.float32)
        start = time.perf_counter()
        out = self.prefill.run(self._feeds(ids, real, cache))
        self.prefill_seconds = time.perf_counter() - start
        self.step_seconds: list[float] = []
        tokens = []
        for k in range(self.new_tokens):
            token = np.argmax(out["logits"][:, -1, :], axis=-1).astype(np.int64)
            tokens.append(token)
            if k == self.new_tokens - 1:
                break
            # the cache moves one slot left: the dropped slot 0 is empty while real < capacity
            cache = {p: out[q][:, :, 1:, :] for p, q in zip(self.layout.past, self.layout.present)}
            real = real + 1
            start = time.perf_counter()
            out = self.step.run(self._feeds(token[:, None], real, cache))
            self.step_seconds.append(time.perf_counter() - start)
        return np.stack(tokens, axis=1)
