"""Tuning records: round trip, stale records ignored with one warning, torn lines, SIGKILL resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from autotune.database import Database, compiler_version, config_key, make_record

ROOT = Path(__file__).resolve().parents[2]


def rec(i: int, costs: list[float] | None = None, error_kind: str | None = None, **kw) -> dict:
    r = make_record(
        workload_key=kw.pop("workload_key", "wk"),
        task_name="matmul",
        target={"cpu": "znver4", "features": "+avx512f"},
        space_hash=kw.pop("space_hash", "h1"),
        config={"tile": [i, 1], "vector": 1},
        passes=[f"tile{{sizes={i},1}}"],
        costs=[1.0 + i, 0.5 + i] if costs is None else costs,
        error_kind=error_kind,
        flops=1e6,
    )
    r.update(kw)
    return r


def test_append_records_best_round_trip(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.jsonl")
    db.append(rec(3))
    db.append(rec(1))
    db.append(rec(0, costs=[], error_kind="runtime_error", error="crashed"))
    db.append(rec(2))
    db.append(rec(5, workload_key="other"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = Database(tmp_path / "db.jsonl")
        got = again.records("wk")
        assert [r["config"]["tile"][0] for r in got] == [3, 1, 0, 2]
        assert got[0] == json.loads(json.dumps(rec(3) | {"timestamp": got[0]["timestamp"]}))
        best = again.best("wk")
        assert best is not None and best["config"]["tile"] == [1, 1]
        assert again.best("missing") is None
        assert again.measured_keys("wk") == {config_key(rec(i)["config"]) for i in (0, 1, 2, 3)}
        assert again.workloads() == {"wk", "other"}
    assert got[0]["compiler_version"] == compiler_version() != ""


def test_records_of_another_version_or_space_are_ignored_with_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    db = Database(path)
    db.append(rec(1))
    db.append(rec(2, space_hash="old-space"))
    db.append(rec(0, compiler_version="0.0.0-old"))
    db.append(rec(4, compiler_version="0.0.0-old", space_hash="old-space"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh = Database(path, space_hashes={"wk": "h1"})
        assert [r["config"]["tile"][0] for r in fresh.records("wk")] == [1]
        best = fresh.best("wk")
        assert best is not None and best["config"]["tile"] == [1, 1]  # not the faster stale ones
        assert len(fresh.measured_keys("wk")) == 1
        assert [r["config"]["tile"][0] for r in fresh.records("wk", space_hash="old-space")] == [2]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "another compiler version" in messages[0] and "space hash" in messages[0]


def test_torn_last_line_is_ignored_and_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    with open(path, "ab") as f:
        f.write(json.dumps(rec(2)).encode()[:40])  # killed mid-write
    with pytest.warns(UserWarning, match="incomplete last line"):
        db = Database(path)
    assert [r["config"]["tile"][0] for r in db.records()] == [1]
    db.append(rec(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn or malformed line is left
        assert [r["config"]["tile"][0] for r in Database(path).records()] == [1, 3]


WRITER = textwrap.dedent(
    """
    import sys
    from autotune.database import Database, config_key, make_record

    path, total = sys.argv[1], int(sys.argv[2])
    db = Database(path)
    done = db.measured_keys("wk")
    for i in range(total):
        config = {"i": i}
        if config_key(config) in done:
            continue
        db.append(make_record(workload_key="wk", task_name="t", target={}, space_hash="h",
                              config=config, passes=[], costs=[float(i + 1)], error_kind=None,
                              error="x" * 3000))
    """
)


def test_resume_after_sigkill_mid_append(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    total = 300
    cmd = [sys.executable, "-c", WRITER, str(path), str(total)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 30:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line may or may not be there
        before = [r["config"]["i"] for r in Database(path).records()]
    assert 30 <= len(before) < total, len(before)  # killed mid-run
    assert before == list(range(len(before)))
    subprocess.run(cmd, env=env, check=True, timeout=60)  # resume
    after = [r["config"]["i"] for r in Database(path).records("wk")]
    assert after == list(range(total))  # every record exactly once, in order


def test_append_fills_in_version_target_and_time(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.jsonl")
    db.append(
        {
            "workload_key": "wk",
            "space_hash": "h",
            "config": {"a": 1},
            "costs": [1.0],
            "error_kind": None,
        }
    )
    (r,) = Database(tmp_path / "db.jsonl").records()
    assert r["compiler_version"] == compiler_version()
    assert r["target"]["cpu"] and "timestamp" in r
    assert Database(tmp_path / "db.jsonl").measured_keys("wk") == {'{"a":1}'}
