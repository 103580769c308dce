"""Gradient-based task scheduler: warm-up, allocation by weighted latency and slope, budget."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from autotune.task_scheduler import GradientTaskScheduler


@dataclass(frozen=True)
class FakeTask:
    weight: int
    workload_key: str = ""
    flops: float = 1.0


@dataclass
class Curve:
    """Best latency after t trials: floor + (start - floor) * exp(-t / tau)."""

    start: float
    floor: float
    tau: float

    def __call__(self, t: int) -> float:
        return self.floor + (self.start - self.floor) * math.exp(-t / self.tau)


def simulate(sched: GradientTaskScheduler, curves: list[Curve], *, exhaust_at=None):
    """Run the tuner loop; returns (order of tasks, trials measured per task)."""
    done = [0] * len(curves)
    best: dict[int, float] = {}
    order = []
    exhaust_at = exhaust_at or {}
    while (i := sched.next_task(best)) is not None:
        order.append(i)
        n = sched.last_batch
        assert 0 < n <= sched.batch
        cap = exhaust_at.get(i)
        measured = n if cap is None else max(0, min(n, cap - done[i]))
        done[i] += measured
        best[i] = curves[i](done[i])
        if measured < n:
            sched.mark_exhausted(i, unused=n - measured)
        assert len(order) < 10_000
    return order, done


def test_warmup_round_robin_then_budget_is_exact():
    sched = GradientTaskScheduler([FakeTask(1)] * 3, total_trials=100, batch=16)
    order, done = simulate(sched, [Curve(1.0, 0.5, 50)] * 3)
    assert order[:3] == [0, 1, 2]
    assert sum(done) == 100 == sched.trials_used  # last batch is partial (100 = 6 * 16 + 4)
    assert sched.remaining == 0
    assert sched.next_task({}) is None


def test_warmup_takes_the_tasks_with_most_work_first():
    # a budget of two batches over four tasks: the two with the most weight x FLOPs get them,
    # whatever their place in the model (ties keep the model's order)
    tasks = [
        FakeTask(1, "a", 1e3),
        FakeTask(2, "b", 1e6),
        FakeTask(8, "c", 1e3),
        FakeTask(1, "d", 4e6),
    ]
    sched = GradientTaskScheduler(tasks, total_trials=32, batch=16)
    order, done = simulate(sched, [Curve(1.0, 0.5, 50)] * 4)
    assert order == [3, 1]
    assert done == [0, 16, 0, 16]
    even = GradientTaskScheduler([FakeTask(1, "x", 5.0)] * 3, total_trials=48, batch=16)
    assert simulate(even, [Curve(1.0, 0.5, 50)] * 3)[0] == [0, 1, 2]


def test_more_trials_to_larger_weighted_latency_and_slope():
    tasks = [FakeTask(1), FakeTask(6), FakeTask(1)]
    curves = [
        Curve(0.2, 0.19, 400),  # small and nearly flat
        Curve(1.0, 0.2, 60),  # heavy (weight 6), slow and still improving fast
        Curve(0.5, 0.3, 200),  # middle
    ]
    sched = GradientTaskScheduler(tasks, total_trials=480, batch=16)
    order, done = simulate(sched, curves)
    assert sum(done) == 480
    assert done[1] > done[2] > done[0]
    assert done[1] >= 0.5 * 480
    # every task got at least its warm-up batch
    assert min(done) >= 16


def test_gradient_prefers_the_recent_slope():
    sched = GradientTaskScheduler([FakeTask(1), FakeTask(1)], total_trials=10**6, batch=8)
    sched.history[0] = [1.0, 0.8, 0.6, 0.4, 0.3]  # improving
    sched.history[1] = [0.3, 0.3, 0.3, 0.3, 0.3]  # flat, same current best and rounds
    assert sched.gradient(0) > sched.gradient(1)
    sched.exhausted = [False, False]
    sched._warmup = []
    assert sched.next_task({}) == 0
    # weight multiplies the gradient
    heavy = GradientTaskScheduler([FakeTask(1), FakeTask(5)], total_trials=100, batch=8)
    heavy.history = [[0.3] * 5, [0.3] * 5]
    assert heavy.gradient(1) == pytest.approx(5 * heavy.gradient(0))


def test_exhausted_tasks_are_skipped_and_refund_their_trials():
    tasks = [FakeTask(10), FakeTask(1)]
    curves = [Curve(1.0, 0.1, 30), Curve(0.5, 0.4, 100)]
    sched = GradientTaskScheduler(tasks, total_trials=200, batch=16)
    order, done = simulate(sched, curves, exhaust_at={0: 40})  # task 0's space has 40 configs
    assert done[0] == 40
    assert sched.exhausted[0]
    assert sum(done) == 200 and done[1] == 160
    assert order.count(0) == 3  # 16 + 16 + 8 (then exhausted), never picked again


def test_per_task_budget_and_all_exhausted():
    sched = GradientTaskScheduler([FakeTask(5), FakeTask(1)], 1000, 16, max_trials_per_task=48)
    order, done = simulate(sched, [Curve(1.0, 0.1, 30), Curve(1.0, 0.1, 30)])
    assert done == [48, 48]
    sched = GradientTaskScheduler([FakeTask(1), FakeTask(1)], 1000, 16)
    order, done = simulate(sched, [Curve(1.0, 0.1, 30)] * 2, exhaust_at={0: 20, 1: 5})
    assert done == [20, 5]
    assert sched.next_task({}) is None


def test_failing_task_does_not_hog_the_budget():
    sched = GradientTaskScheduler([FakeTask(1), FakeTask(1)], total_trials=320, batch=16)
    best: dict[int, float] = {}
    counts = [0, 0]
    t = 0
    while (i := sched.next_task(best)) is not None:
        counts[i] += sched.last_batch
        if i == 1:
            t += sched.last_batch
            best[1] = Curve(1.0, 0.2, 80)(t)
        else:
            best[0] = math.inf  # every candidate of task 0 fails
    assert counts[0] <= sched.window * 16 + 16
    assert counts[1] > 200


def test_accepts_workload_keys_and_handles_edge_cases():
    tasks = [FakeTask(1, "a"), FakeTask(3, "b")]
    sched = GradientTaskScheduler(tasks, total_trials=64, batch=16)
    best = {}
    while (i := sched.next_task(best)) is not None:
        best[tasks[i].workload_key] = 1.0 / (1 + sched.trials[i])
    assert sched.history[1][0] == pytest.approx(1.0 / 17)
    assert sched.trials_used == 64
    assert GradientTaskScheduler([], 100, 16).next_task({}) is None
    assert GradientTaskScheduler([FakeTask(1)], 0, 16).next_task({}) is None
    with pytest.raises(ValueError):
        GradientTaskScheduler([FakeTask(1)], 10, 0)
