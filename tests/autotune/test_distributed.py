"""Measurement on a dask cluster (autotune/distributed.py), on a local two-worker cluster: a batch is
split over the workers and comes back in candidate order with the kinds local measurement gives,
tuning records carry the workers' target, a failing chunk becomes error results (tuning goes on),
and a cluster of mixed targets is refused."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from autotune.database import Database
from autotune.database import host_target as db_host_target
from autotune.measure import MeasureResult, host_target, measure
from autotune.space import SearchSpace
from autotune.task import Task, anchor_info, extract_tasks
from autotune.tuner import tune_task

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed (pip install 'ziggurat[tune]')"
)
import dask  # noqa: E402  (after the skip: dask comes with distributed)

from autotune.distributed import DaskMeasurer, DaskSetupError, common_target  # noqa: E402

FAST = {"repeat": 2}  # measure kwargs on the workers: two timed repeats are enough here


def matmul_model(n: int = 32) -> onnx.ModelProto:
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "matmul",
        [vi("a", TensorProto.FLOAT, [n, n]), vi("b", TensorProto.FLOAT, [n, n])],
        [vi("y", TensorProto.FLOAT, [n, n])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


@pytest.fixture(scope="module")
def task() -> Task:
    (t,) = extract_tasks(matmul_model())
    return t


@pytest.fixture(scope="module")
def candidates(task: Task) -> list[list[str]]:
    """The default config and three sampled ones, as pass lists."""
    space = SearchSpace(anchor_info(task))
    rng = random.Random(0)
    configs = [space.default_config()]
    while len(configs) < 4:
        c = space.sample(rng)
        if space.key(c) not in {space.key(x) for x in configs}:
            configs.append(c)
    return [space.to_passes(c, task.anchor) for c in configs]


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    # a worker that dies fails its task at once (the default retries it on 3 more workers)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def worker_targets(client: distributed.Client) -> dict[str, dict[str, str]]:
    return client.run(host_target)


def test_a_batch_is_measured_on_the_workers_like_locally(
    client: distributed.Client, task: Task, candidates: list[list[str]]
) -> None:
    m = DaskMeasurer(client, measure_kwargs=FAST)
    assert m.n_workers == 2
    targets = worker_targets(client)
    assert sorted(m.workers) == sorted(targets)
    assert all(t == m.target for t in targets.values())

    results = m(task, candidates)
    assert len(results) == 4
    for r in results:
        assert r.error_kind is None, r.error
        assert len(r.costs) == 2 and all(c > 0 for c in r.costs)
    local = measure(task, candidates, repeat=1)
    assert [r.error_kind for r in results] == [r.error_kind for r in local]

    # each worker keeps its runner process (and reference) from one batch to the next
    def runner_pid():
        from autotune import measure as measure_module

        return measure_module._RUNNER.pid if measure_module._RUNNER is not None else None

    pids = client.run(runner_pid)
    assert all(pids.values()), pids  # both workers measured a chunk
    again = m(task, candidates[:2])
    assert [r.error_kind for r in again] == [None, None]
    assert client.run(runner_pid) == pids
    m.close()  # a client passed in stays open
    assert client.status == "running"


def test_results_come_back_in_candidate_order_one_chunk_per_worker(client: distributed.Client) -> None:
    def tag(task, cands, kwargs):  # runs on a worker: says which candidate, where
        from distributed import get_worker

        where = get_worker().address
        return [MeasureResult(costs=[1.0], error=f"{json.dumps(c)}@{where}") for c in cands]

    with DaskMeasurer(client, chunk_fn=tag) as m:
        cands = [[f"pass-{i}"] for i in range(7)]
        results = m(None, cands)
    assert [json.loads(r.error.split("@")[0]) for r in results] == cands
    where = [r.error.split("@")[1] for r in results]
    assert set(where) == set(m.workers)  # both workers got a chunk ...
    assert where == sorted(where, key=where.index)  # ... of consecutive candidates
    assert all(r.ok for r in results)


def test_tune_task_records_the_workers_target(
    tmp_path: Path, client: distributed.Client, task: Task
) -> None:
    info = anchor_info(task)
    path = tmp_path / "db.jsonl"
    m = DaskMeasurer(client, measure_kwargs=FAST)
    result = tune_task(task, info, Database(path), 8, tuner="random", batch=4, measure_fn=m, progress=None)
    records = [json.loads(s) for s in path.read_text().splitlines()]
    assert len(records) == 8 == len(result.curve)
    targets = list(worker_targets(client).values())
    assert all(r["target"] == targets[0] for r in records)
    assert [r["error_kind"] for r in records].count(None) >= 1, [r["error"] for r in records]
    assert result.best_gflops > 0


def test_records_name_the_measurer_target_not_this_host(tmp_path: Path, task: Task) -> None:
    """Where a measure_fn says it measured (`.target`), that goes in the record; plain functions
    (measure.measure) leave the database to write this host's target."""
    info = anchor_info(task)
    elsewhere = {"cpu": "elsewhere-cpu", "features": "+far"}

    def here(task, cands):
        return [MeasureResult(costs=[1e-6]) for _ in cands]

    class Remote:
        target = elsewhere

        def __call__(self, task, cands):
            return here(task, cands)

    for i, (fn, want) in enumerate([(Remote(), elsewhere), (here, db_host_target())]):
        path = tmp_path / f"{i}.jsonl"
        tune_task(task, info, Database(path), 3, tuner="random", measure_fn=fn, progress=None)
        assert [json.loads(s)["target"] for s in path.read_text().splitlines()] == [want] * 3


def test_failures_are_results_and_tuning_goes_on(
    client: distributed.Client, task: Task, candidates: list[list[str]]
) -> None:
    with DaskMeasurer(client, measure_kwargs=FAST) as m:
        # bad pass specs fail to compile on the worker: measure records it, the others measure
        results = m(task, [candidates[0], ["tile{sizes=4,4}"], candidates[1], ["no-such-pass"]])
    assert [r.error_kind for r in results] == [None, "compile_error", None, "compile_error"], results
    assert "expected 3 tile sizes" in results[1].error

    def boom(task, cands, kwargs):
        raise RuntimeError("injected failure")

    with DaskMeasurer(client, chunk_fn=boom) as m:
        results = m(task, candidates)
    assert [r.error_kind for r in results] == ["runtime_error"] * 4
    assert all(r.error == "dask: RuntimeError: injected failure" for r in results), results

    def slow(task, cands, kwargs):
        time.sleep(3)
        return [MeasureResult(costs=[1.0]) for _ in cands]

    with DaskMeasurer(client, chunk_fn=slow, chunk_timeout_s=0.5) as m:
        results = m(task, candidates)
    assert [r.error_kind for r in results] == ["runtime_error"] * 4
    assert "no result within 0.5 s" in results[0].error


def test_mixed_targets_are_refused() -> None:
    a = {"cpu": "skylake-avx512", "features": "+avx2,+avx512f,+fma"}
    b = {"cpu": "znver3", "features": "+avx2,+fma"}
    assert common_target({"tcp://a:1": a, "tcp://b:1": dict(a)}) == a
    with pytest.raises(DaskSetupError) as e:
        common_target({"tcp://a:1": a, "tcp://b:1": b, "tcp://c:1": b})
    msg = str(e.value)
    assert "2 different targets" in msg
    assert "tcp://a:1: cpu skylake-avx512" in msg and "tcp://b:1, tcp://c:1: cpu znver3" in msg
    # the same CPU name with other features: the differing features are named
    with pytest.raises(DaskSetupError, match=r"\+avx512f"):
        common_target({"tcp://a:1": a, "tcp://b:1": {"cpu": a["cpu"], "features": "+avx2,+fma"}})
    with pytest.raises(DaskSetupError, match="no dask workers"):
        common_target({})


def test_without_dask_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(DaskSetupError, match=r"pip install 'ziggurat\[tune\]'"):
        DaskMeasurer("tcp://127.0.0.1:8786")


def test_cli_tune_with_dask(tmp_path: Path, client: distributed.Client, capsys: pytest.CaptureFixture) -> None:
    from compiler.cli import main

    model = tmp_path / "mm.onnx"
    onnx.save(matmul_model(16), model)
    db = tmp_path / "db.jsonl"
    address = client.scheduler.address
    rc = main(["tune", str(model), "--trials", "2", "--db", str(db), "--tuner", "random", "--dask", address])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"measuring on 2 dask workers ({host_target()['cpu']})" in err
    records = [json.loads(s) for s in db.read_text().splitlines()]
    assert len(records) == 2
    assert all(r["target"] == host_target() for r in records)


def test_a_worker_that_dies_fails_its_chunk_only(client: distributed.Client) -> None:
    """Last: it costs a worker (the nanny starts a new one, which the next batch checks)."""

    def die_on_marker(task, cands, kwargs):
        if ["die"] in cands:
            os._exit(3)
        return [MeasureResult(costs=[1.0]) for _ in cands]

    with DaskMeasurer(client, chunk_fn=die_on_marker) as m:
        before = set(m.workers)
        results = m(None, [["a"], ["b"], ["die"], ["c"]])
        assert [r.error_kind for r in results] == [None, None, "runtime_error", "runtime_error"]
        assert results[2].error.startswith("dask: KilledWorker"), results[2].error
        client.wait_for_workers(2, timeout=60)
        again = m(None, [["a"], ["b"]])
        assert all(r.ok for r in again)
        assert set(m.workers) - before  # the restarted worker was asked for its target
