"""Search strategies that propose the next batch of configurations to measure.

`SimulatedAnnealing` is AutoTVM's model-based search: `parallel_size` chains walk the space with
`space.mutate`, a move from score s to s' is accepted with probability min(1, exp((s' - s) / T))
while T falls linearly from `temperature[0]` to `temperature[1]` over `n_iters` steps, and a heap
keeps the best-scoring configurations seen that are not yet measured. A batch is the top of that
heap plus an `epsilon` fraction of uniformly random unmeasured configurations (exploration). The
chains persist between calls, so each batch starts where the last one ended.

`RandomSearch` proposes uniformly random unmeasured configurations (the baseline tuner).

Both never propose a configuration whose `space.key` is in `measured` (nor one twice in a batch)
and are reproducible for a given seed. When a space is (nearly) exhausted they return fewer than
`n` configurations, possibly none.

`features_fn(configs) -> (N, F) array` maps configurations to cost-model features; the tuner
builds it from `space.to_schedule` and `autotune.features.features`.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from autotune.record import Config

FeaturesFn = Callable[[Sequence[Config]], np.ndarray]


class Space(Protocol):
    """What the search needs from a space (autotune/knob_space.py's KnobSpace)."""

    def sample(self, rng: random.Random) -> Config: ...

    def mutate(self, config: Config, rng: random.Random) -> Config: ...

    def key(self, config: Config) -> str: ...


class Model(Protocol):
    def predict(self, X: np.ndarray) -> np.ndarray: ...


class SearchStrategy(Protocol):
    def propose(self, n: int, measured: set[str]) -> list[Config]: ...


def _as_rng(rng: random.Random | int | None) -> random.Random:
    if isinstance(rng, random.Random):
        return rng
    return random.Random(rng)


ENUMERATE_LIMIT = 20_000
"""Spaces up to this size are enumerated once random sampling stops finding unmeasured configs."""


def _random_unmeasured(
    space: Space,
    rng: random.Random,
    n: int,
    exclude: set[str],
    max_tries: int | None = None,
) -> list[Config]:
    """Up to `n` random configs whose keys are not in `exclude` (which this extends)."""
    out: list[Config] = []
    tries = 0
    limit = max_tries if max_tries is not None else 20 * n + 100
    while len(out) < n and tries < limit:
        tries += 1
        config = space.sample(rng)
        key = space.key(config)
        if key in exclude:
            continue
        exclude.add(key)
        out.append(config)
    if len(out) < n and getattr(space, "size", ENUMERATE_LIMIT + 1) <= ENUMERATE_LIMIT:
        # a small space nearly measured: sampling may miss its rare configs, so list them all
        rest = [c for c in space.configs() if space.key(c) not in exclude]  # type: ignore[attr-defined]
        rng.shuffle(rest)
        for config in rest[: n - len(out)]:
            exclude.add(space.key(config))
            out.append(config)
    return out


class RandomSearch:
    """Uniformly random unmeasured configurations: `RandomSearch(space, rng)`."""

    def __init__(
        self,
        space: Space,
        rng: random.Random | int | None = 0,
        *,
        max_tries_per_config: int = 20,
    ) -> None:
        self.space = space
        self.rng = _as_rng(rng)
        self.max_tries_per_config = max_tries_per_config

    def propose(self, n: int, measured: set[str]) -> list[Config]:
        if n <= 0:
            return []
        exclude = set(measured)
        return _random_unmeasured(
            self.space, self.rng, n, exclude, self.max_tries_per_config * n + 100
        )


class SimulatedAnnealing:
    """AutoTVM's simulated annealing over a cost model (see module doc).

    n_iters: maximum annealing steps per `propose`; early_stop: stop after that many steps without
    a new entry in the top-`n` heap; parallel_size: number of chains; temperature: (start, end);
    epsilon: fraction of each batch drawn uniformly at random.
    """

    def __init__(
        self,
        space: Space,
        model: Model,
        features_fn: FeaturesFn,
        rng: random.Random | int | None = 0,
        n_iters: int = 500,
        temperature: tuple[float, float] = (1.0, 0.0),
        epsilon: float = 0.05,
        parallel_size: int = 128,
        early_stop: int = 50,
    ) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.space = space
        self.model = model
        self.features_fn = features_fn
        self.rng = _as_rng(rng)
        self.n_iters = n_iters
        self.temperature = temperature
        self.epsilon = epsilon
        self.parallel_size = parallel_size
        self.early_stop = early_stop
        self._np_rng = np.random.default_rng(self.rng.getrandbits(64))
        self._points: list[Config] = []  # chain states, kept across calls (as AutoTVM does)
        self.n_scored = 0  # configs scored by the model so far (for statistics)

    def _score(self, configs: Sequence[Config]) -> np.ndarray:
        if not configs:
            return np.zeros(0)
        X = np.asarray(self.features_fn(configs))
        scores = np.asarray(self.model.predict(X), dtype=np.float64).reshape(-1)
        if scores.shape[0] != len(configs):
            raise ValueError(
                f"cost model returned {scores.shape[0]} scores for {len(configs)} configs"
            )
        self.n_scored += len(configs)
        return np.where(np.isfinite(scores), scores, -np.inf)

    def anneal(self, n: int, measured: set[str]) -> list[Config]:
        """The best `n` unmeasured configurations the chains found, best first."""
        space, rng = self.space, self.rng
        if len(self._points) < self.parallel_size:
            self._points += [
                space.sample(rng) for _ in range(self.parallel_size - len(self._points))
            ]
        points = list(self._points)
        scores = self._score(points)

        # min-heap of (score, tiebreak, key, config); the tiebreak keeps it deterministic and
        # never compares configs
        heap: list[tuple[float, int, str, Config]] = []
        in_heap: set[str] = set()
        counter = 0

        def offer(score: float, config: Config) -> bool:
            nonlocal counter
            key = space.key(config)
            if key in measured or key in in_heap:
                return False
            counter += 1
            if len(heap) < n:
                heapq.heappush(heap, (score, -counter, key, config))
            elif score > heap[0][0]:
                _, _, old, _ = heapq.heapreplace(heap, (score, -counter, key, config))
                in_heap.discard(old)
            else:
                return False
            in_heap.add(key)
            return True

        for s, p in zip(scores, points):
            offer(float(s), p)

        t0, t1 = self.temperature
        cool = (t0 - t1) / (self.n_iters + 1)
        temp = t0
        k = last_change = 0
        while k < self.n_iters and k < last_change + self.early_stop:
            new_points = [space.mutate(p, rng) for p in points]
            new_scores = self._score(new_points)
            with np.errstate(over="ignore", invalid="ignore"):
                prob = np.exp(np.minimum((new_scores - scores) / (temp + 1e-5), 1.0))
            prob = np.nan_to_num(prob, nan=0.0)
            accept = self._np_rng.random(len(points)) < prob
            for i in np.flatnonzero(accept):
                points[i] = new_points[i]
                scores[i] = new_scores[i]
            for s, p in zip(new_scores, new_points):
                if offer(float(s), p):
                    last_change = k
            k += 1
            temp = max(temp - cool, t1)
        self._points = points
        return [c for _, _, _, c in sorted(heap, key=lambda e: (-e[0], -e[1]))]

    def propose(self, n: int, measured: set[str]) -> list[Config]:
        """n configs to measure: the top of the annealing heap plus an epsilon random fraction."""
        if n <= 0:
            return []
        n_random = min(n, math.floor(n * self.epsilon + self.rng.random()))  # unbiased rounding
        best = self.anneal(n, measured)
        batch = best[: n - n_random]
        exclude = set(measured) | {self.space.key(c) for c in batch}
        batch += _random_unmeasured(self.space, self.rng, n - len(batch), exclude)
        return batch
