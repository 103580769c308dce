"""The tuning loop (autotune/tuner.py, autotune/tune_model.py) on real measurements of a small
matmul: every trial is one record appended (and on disk) as it is measured, the untuned default
comes first, nothing is measured twice, a second run resumes from the database, and a model's
budget is spent exactly."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from autotune.database import Database, comparable_costs
from autotune.measure import LocalMeasurer, MeasureResult, measure
from autotune.record import TuningRecord
from autotune.space import SearchSpace
from autotune.task import Task, anchor_info, extract_tasks
from autotune.tune_model import ModelTuneSummary, tune_tasks
from autotune.tuner import TaskTuneResult, TuneProgress, tune_task
from compiler import zoo

pytest.importorskip("xgboost")


def matmul_model(n: int = 64) -> onnx.ModelProto:
    return zoo.matmul(n)


def mlp_model() -> onnx.ModelProto:
    return zoo.mlp()


@pytest.fixture(scope="module")
def matmul_task() -> Task:
    (task,) = extract_tasks(matmul_model())
    assert task.name.startswith("matmul 64x64 k64")
    return task


def lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "torn last line"
    return [json.loads(s) for s in text.splitlines()]


class Recorder:
    """A measure function that measures for real and remembers what it was asked to measure."""

    def __init__(self) -> None:
        self.candidates: list[list[str]] = []

    def __call__(self, task, candidates):
        self.candidates.extend(candidates)
        return measure(task, candidates)


def check_progress(
    db_path: Path, before: int
) -> tuple[list[TuneProgress], Callable[[TuneProgress], None]]:
    seen: list[TuneProgress] = []

    def progress(p: TuneProgress) -> None:
        # each record is on disk (complete line) before its trial is reported
        assert len(lines(db_path)) == before + p.trials_done
        seen.append(p)

    return seen, progress


@pytest.mark.parametrize("tuner", ["xgb", "random"])
def test_tune_task_records_every_trial_and_resumes(
    tmp_path: Path, matmul_task: Task, tuner: str
) -> None:
    info = anchor_info(matmul_task)
    space = SearchSpace(info)
    path = tmp_path / "db.jsonl"
    trials = 6
    seen, progress = check_progress(path, 0)
    rec = Recorder()
    result = tune_task(
        matmul_task,
        info,
        Database(path),
        trials,
        tuner=tuner,
        seed=3,
        batch=3,
        progress=progress,
        measurer=LocalMeasurer(rec),
    )

    records = lines(path)
    assert len(records) == trials == len(rec.candidates) == len(result.curve)
    assert [p.trials_done for p in seen] == list(range(1, trials + 1))
    assert all(p.trials_total == trials and p.task_count == 1 for p in seen)
    for r in records:
        assert r["workload_key"] == matmul_task.workload_key
        assert r["space_hash"] == space.space_hash()
        assert space.contains(r["config"])
        assert r["passes"] == space.to_passes(r["config"], matmul_task.anchor)
    # the untuned baseline is measured first
    assert records[0]["config"] == space.default_config()
    keys = [space.key(r["config"]) for r in records]
    assert len(set(keys)) == len(keys), "a config was measured twice"
    ok = [r for r in records if r["error_kind"] is None]
    assert ok, [r["error"] for r in records]
    # paired records (each timed beside the default schedule) compare by their ratio to it
    assert all(r["baseline_costs"] for r in ok)
    best_from_db = max(
        matmul_task.flops / c / 1e9
        for c in comparable_costs([TuningRecord.from_json(r) for r in ok])
    )
    assert result.best_gflops == pytest.approx(best_from_db)
    assert result.best_gflops > 0 and result.best_config is not None
    assert all(b >= a for a, b in zip(result.curve, result.curve[1:])), result.curve
    assert result.curve[-1] == result.best_gflops

    # a second run (a fresh Database, as a new process would open it) measures only new configs
    more = 4
    seen2, progress2 = check_progress(path, trials)
    rec2 = Recorder()
    again = tune_task(
        matmul_task,
        info,
        Database(path),
        more,
        tuner=tuner,
        seed=3,
        batch=3,
        progress=progress2,
        measurer=LocalMeasurer(rec2),
    )
    records2 = lines(path)
    assert records2[:trials] == records
    assert len(records2) == trials + more == trials + len(rec2.candidates)
    assert len(again.curve) == more  # trials count only new measurements
    assert [p.trials_done for p in seen2] == list(range(1, more + 1))
    new_keys = [space.key(r["config"]) for r in records2[trials:]]
    assert not set(new_keys) & set(keys), "a config from the database was measured again"
    assert len(set(new_keys)) == more
    assert space.key(space.default_config()) not in new_keys
    # the known records count: the best never goes below what the database already held
    assert again.best_gflops >= result.best_gflops
    assert again.curve[0] >= result.best_gflops


def test_tune_task_stops_when_the_space_is_exhausted(tmp_path: Path) -> None:
    """A tiny space (elementwise 4x10 of the mlp): every config once, then it stops."""
    task = next(t for t in extract_tasks(mlp_model()) if t.name.startswith("elementwise"))
    info = anchor_info(task)
    space = SearchSpace(info)
    assert space.size < 100
    rng = random.Random(0)

    def fake(task, candidates):  # timings only matter for ordering here
        return [MeasureResult(costs=[1e-6 * (1 + rng.random())]) for _ in candidates]

    path = tmp_path / "db.jsonl"
    result = tune_task(
        task,
        info,
        Database(path),
        space.size + 20,
        tuner="random",
        measurer=LocalMeasurer(fake),
        progress=None,
    )
    keys = [space.key(r["config"]) for r in lines(path)]
    assert len(result.curve) == len(keys) == len(set(keys)) == space.size


def test_tune_tasks_spends_exactly_the_budget(tmp_path: Path) -> None:
    tasks = extract_tasks(mlp_model())
    assert len(tasks) >= 3
    path = tmp_path / "db.jsonl"
    budget = 7
    summary = tune_tasks(tasks, str(path), budget, tuner="random", seed=1, batch=2, progress=False)
    records = lines(path)
    assert len(records) == budget
    assert sum(summary.trials.values()) == budget
    by_task: dict[str, int] = {}
    for r in records:
        by_task[r["workload_key"]] = by_task.get(r["workload_key"], 0) + 1
    assert by_task == {k: v for k, v in summary.trials.items() if v}
    # warm-up round-robin: the first tasks get one batch each
    assert sorted(by_task.values(), reverse=True) == [2, 2, 2, 1]
    for key, result in summary.results.items():
        assert len(result.curve) == summary.trials[key]
    table = summary.table()
    assert all(t.name[:43] in table for t in tasks)

    # a second call continues: the budget is new measurements only, none repeated
    summary2 = tune_tasks(tasks, str(path), 3, tuner="random", seed=1, batch=2, progress=False)
    records2 = lines(path)
    assert records2[:budget] == records and len(records2) == budget + 3
    assert sum(summary2.trials.values()) == 3
    per_workload = [(r["workload_key"], json.dumps(r["config"], sort_keys=True)) for r in records2]
    assert len(set(per_workload)) == len(per_workload)


def test_a_host_that_changes_speed_does_not_mislead_the_tuner(
    tmp_path: Path, matmul_task: Task
) -> None:
    """Candidates measured while the host ran 3x slower are compared with the others by their
    time over the default schedule's timed beside them (paired measurement), not by seconds."""
    import hashlib

    info = anchor_info(matmul_task)
    space = SearchSpace(info)
    default = space.to_passes(space.default_config(), matmul_task.anchor)

    def true_ratio(passes: list[str]) -> float:  # each config's speed over the default's
        if passes == default:
            return 1.0
        h = int(hashlib.sha256(json.dumps(passes).encode()).hexdigest(), 16)
        return 0.6 + 0.8 * (h % 1000) / 1000

    def phased(task: Task, candidates: list[list[str]]) -> list[MeasureResult]:
        out = []
        for passes in candidates:
            r = true_ratio(passes)
            base = 3e-4 * (3.0 if r < 1.0 else 1.0)  # the good ones met a slow host
            out.append(MeasureResult([base * r], baseline_costs=[base]))
        return out

    db = Database(tmp_path / "db.jsonl")
    result = tune_task(
        matmul_task, info, db, 12, seed=1, batch=4, progress=None, measurer=LocalMeasurer(phased)
    )
    records = lines(tmp_path / "db.jsonl")
    key = space.key
    truth = {key(r["config"]): true_ratio(r["passes"]) for r in records}
    fastest = min(truth, key=lambda k: truth[k])
    assert truth[fastest] < 1.0  # some were measured on the slow host
    by_seconds = min(records, key=lambda r: min(r["costs"]))
    assert key(by_seconds["config"]) != fastest  # what comparing seconds would pick
    assert result.best_config is not None and key(result.best_config) == fastest
    best = Database(tmp_path / "db.jsonl").best(matmul_task.workload_key, space.space_hash())
    assert best is not None and key(best.config) == fastest
    assert result.best_gflops == pytest.approx(matmul_task.flops / (3e-4 * truth[fastest]) / 1e9)
    assert result.vs_default == pytest.approx(truth[fastest])


def test_the_summary_says_where_no_record_beat_the_default(matmul_task: Task) -> None:
    summary = ModelTuneSummary([matmul_task])
    header = summary.table().splitlines()[0]
    assert header.split()[-2:] == ["vs", "default"]
    for vs, shown in ((0.8, "0.80x"), (1.0, "1.00x (kept)"), (None, "-")):
        summary.results[matmul_task.workload_key] = TaskTuneResult(matmul_task, 1.0, {}, [], vs)
        row = summary.table().splitlines()[1]
        assert row.endswith(" " + shown), row
