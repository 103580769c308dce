"""Spread a global trial budget over a model's tasks (MetaSchedule's gradient-based allocation).

Usage by the tuner::

    sched = GradientTaskScheduler(tasks, total_trials=2000, batch=16)
    while (i := sched.next_task(best_latency)) is not None:
        n = sched.last_batch                 # trials granted to task i this round
        ... measure up to n configs of task i, update best_latency[i] ...
        if the space of task i is exhausted:
            sched.mark_exhausted(i, unused=n - measured)

The first rounds are a warm-up round-robin (every task gets one batch), the tasks with the most work
(weight x FLOPs per call) first: a budget too small to reach every task tunes the ones that take the
model's time, not the first few kernels of the graph, which are often small elementwise ones (a
Qwen2 shape at 96 trials had tuned six of its 22 tasks, all under 5% of its time, and none of the
matmuls that take 96% of it). After that, each round
goes to the task with the largest estimated reduction of the model's total latency
sum_i(weight_i * latency_i) per trial, as in MetaSchedule (gradient_based.cc):

    g_backward = (best[n-1-window] - best[n-1]) / window   (recent improvement per round)
    g_forward  = best[n-1] / n                             (optimistic: what is left, by rounds)
    gradient   = weight * (alpha * g_backward + (1 - alpha) * g_forward)

where best[j] is the task's best latency after its j-th round. A task with no valid measurement
yet gets priority, until it has had `window` rounds without one (then gradient 0: it can still win
ties). Equal gradients are broken by a seeded random choice. Tasks whose space is exhausted
(`mark_exhausted`) or that used up `max_trials_per_task` are skipped; `next_task` returns None
when the budget is spent or no task is left.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

NO_RESULT_GRADIENT = 1e9


class Weighted(Protocol):
    @property
    def weight(self) -> int: ...


def _valid(latency: Any) -> float | None:
    if latency is None:
        return None
    try:
        value = float(latency)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


class GradientTaskScheduler:
    def __init__(
        self,
        tasks: Sequence[Weighted],
        total_trials: int,
        batch: int,
        *,
        alpha: float = 0.2,
        window: int = 3,
        max_trials_per_task: int | None = None,
        seed: int = 0,
    ) -> None:
        if batch <= 0:
            raise ValueError(f"batch must be positive, got {batch}")
        self.tasks = list(tasks)
        self.weights = [max(1, int(getattr(t, "weight", 1))) for t in self.tasks]
        self.total_trials = max(0, int(total_trials))
        self.batch = batch
        self.alpha = alpha
        self.window = window
        self.max_trials_per_task = max_trials_per_task
        self.rng = random.Random(seed)
        n = len(self.tasks)
        self.trials = [0] * n  # trials granted per task (minus refunds)
        self.history: list[list[float | None]] = [[] for _ in range(n)]  # best after each round
        self.exhausted = [False] * n
        self.last_task: int | None = None
        self.last_batch = 0
        # the most work (weight x FLOPs per call; no `flops`: one) first; ties keep the order
        flops = [_valid(getattr(t, "flops", None)) or 1.0 for t in self.tasks]
        self._warmup = sorted(range(n), key=lambda i: -self.weights[i] * flops[i])

    # ------------------------------------------------------------------ bookkeeping

    @property
    def trials_used(self) -> int:
        return sum(self.trials)

    @property
    def remaining(self) -> int:
        return self.total_trials - self.trials_used

    def mark_exhausted(self, index: int, unused: int = 0) -> None:
        """Task `index` has nothing left to measure; `unused` granted trials go back to the pool."""
        self.exhausted[index] = True
        self.trials[index] -= max(0, min(unused, self.trials[index]))

    def _best(self, best_latency: Mapping[Any, Any], i: int) -> float | None:
        if i in best_latency:
            return _valid(best_latency[i])
        key = getattr(self.tasks[i], "workload_key", None)
        return _valid(best_latency.get(key)) if key is not None else None

    def _task_budget(self, i: int) -> int:
        budget = self.remaining
        if self.max_trials_per_task is not None:
            budget = min(budget, self.max_trials_per_task - self.trials[i])
        return budget

    def _alive(self, i: int) -> bool:
        return not self.exhausted[i] and self._task_budget(i) > 0

    def gradient(self, i: int) -> float:
        """Estimated weighted latency reduction of task i per round (see module doc)."""
        hist = self.history[i]
        n = len(hist)
        if n == 0:
            return NO_RESULT_GRADIENT
        best = hist[-1]
        if best is None:
            return NO_RESULT_GRADIENT if n < self.window else 0.0
        w = self.window
        g_backward = 0.0
        if n >= 1 + w:
            before = hist[n - 1 - w]
            # a task that only got its first valid result inside the window: no slope yet
            g_backward = (before - best) / w if before is not None else 0.0
        g_forward = best / n
        return self.weights[i] * (self.alpha * g_backward + (1 - self.alpha) * g_forward)

    # ------------------------------------------------------------------ scheduling

    def next_task(self, best_latency_per_task: Mapping[Any, Any]) -> int | None:
        """The task to tune next (granting it `self.last_batch` trials), or None when done.

        `best_latency_per_task` maps a task index (or its workload_key) to its best measured
        latency in seconds so far; missing, None, inf or nan mean no valid measurement yet.
        """
        if self.last_task is not None:
            self.history[self.last_task].append(self._best(best_latency_per_task, self.last_task))
            self.last_task = None
        self.last_batch = 0
        if self.remaining <= 0:
            return None
        chosen: int | None = None
        while self._warmup:
            i = self._warmup.pop(0)
            if self._alive(i):
                chosen = i
                break
        if chosen is None:
            alive = [i for i in range(len(self.tasks)) if self._alive(i)]
            if not alive:
                return None
            grads = [self.gradient(i) for i in alive]
            top = max(grads)
            if top == min(grads):
                chosen = alive[self.rng.randrange(len(alive))]
            else:
                chosen = alive[grads.index(top)]
        granted = min(self.batch, self._task_budget(chosen))
        self.trials[chosen] += granted
        self.last_task = chosen
        self.last_batch = granted
        return chosen
