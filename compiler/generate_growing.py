"""Greedy token generation over one program compiled for every size: the past grows by one slot
per token, as onnxruntime and onnxruntime-genai run such a decoder.

compiler/generate.py serves a generation with two static programs over a cache of fixed
capacity (every step attends over all its slots, the empty ones masked). A decoder whose
operators all take run-time sizes (compiler/frontend/run_time_dims.py) compiles once instead
(compiler/symbolic_model.py `once`): the prefill runs with an empty past, each step with the
past the previous call returned (`present.*` fed back as `past_key_values.*`), so a step at past
p does the work of p slots, and any prompt length and number of new tokens need no other
compile. Rows of a batch may differ in length: shorter prompts are left-padded and masked out
by `attention_mask`, their positions starting at 0.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.frontend.onnx import load_model
from compiler.generate import CacheLayout, GenerateError
from compiler.symbolic_model import compile_symbolic


class GrowingGenerator:
    """Greedy decoding of `model` (optimum's decoder-with-past layout, see CacheLayout) with
    one compiled program: `generate(prompts, new_tokens)` -> the new token ids."""

    def __init__(self, model: str | Path | Any, threads: int = 1, cache: bool = True) -> None:
        self.proto = load_model(model)
        self.layout = CacheLayout.of(self.proto)
        self.symbolic = compile_symbolic(self.proto, one_compile=True, threads=threads, cache=cache)
        self.symbolic.once()  # compiled now (or loaded from the compile cache), not mid-run
        self.prefill_seconds = 0.0
        self.step_seconds: list[float] = []

    def _position_limit(self) -> int | None:
        """The number of positions the model has (a learned table), where it sets one."""
        extents = [
            lim.extent for lim in self.symbolic.shapes.input_limits if lim.name == "position_ids"
        ]
        return min(extents) if extents else None

    def generate(
        self, prompts: np.ndarray | Sequence[Sequence[int]], new_tokens: int
    ) -> np.ndarray:
        """The `new_tokens` greedy continuations of each prompt (one sequence of token ids per
        row), [batch, new_tokens] int64."""
        rows = [np.asarray(r, dtype=np.int64).reshape(-1) for r in prompts]
        if not rows or any(len(r) == 0 for r in rows) or new_tokens < 1:
            raise GenerateError("give one or more non-empty prompts and at least one new token")
        longest = max(len(r) for r in rows)
        limit = self._position_limit()
        if limit is not None and longest + new_tokens > limit:
            raise GenerateError(
                f"{new_tokens} new tokens after a prompt of {longest} need positions up to "
                f"{longest + new_tokens - 1}; the model has {limit}"
            )
        batch = len(rows)
        ids = np.zeros((batch, longest), np.int64)
        pad = np.array([longest - len(r) for r in rows], np.int64)
        for r, row in enumerate(rows):
            ids[r, pad[r] :] = row
        mask = (np.arange(longest)[None, :] >= pad[:, None]).astype(np.int64)
        cache = {}
        for name in self.layout.past:
            d = self.layout.cache_dims[name]
            cache[name] = np.zeros((batch, d[1], 0, d[3]), np.float32)
        feeds = {
            "input_ids": ids,
            "attention_mask": mask,
            "position_ids": np.maximum(np.arange(longest)[None, :] - pad[:, None], 0),
            **cache,
        }
        start = time.perf_counter()
        out = self.symbolic.run(feeds)
        self.prefill_seconds = time.perf_counter() - start
        self.step_seconds = []
        tokens = []
        for k in range(new_tokens):
            token = np.argmax(out["logits"][:, -1, :], axis=-1).astype(np.int64)
            tokens.append(token)
            if k == new_tokens - 1:
                break
            mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
            feeds = {
                "input_ids": token[:, None],
                "attention_mask": mask,
                "position_ids": (longest + k - pad)[:, None],
                **{p: out[q] for p, q in zip(self.layout.past, self.layout.present, strict=True)},
            }
            start = time.perf_counter()
            out = self.symbolic.run(feeds)
            self.step_seconds.append(time.perf_counter() - start)
        return np.stack(tokens, axis=1)
