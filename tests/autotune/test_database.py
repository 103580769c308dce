"""Tuning records: round trip, stale and malformed records skipped with one warning, torn and
unterminated last lines, readers that never write nor wait, failed appends, SIGKILL resume,
concurrent writers and readers that lose no record and see no torn one, and the CLI
(`--db` a directory, read-only, on a full disk, with a backslash or newline; malformed records on
`run --db` and on a `tune` resume), and a lock held by a process that may only read the file:
readers (`run`/`compile --db`) go on, writers (`tune`) say whom they wait for and give up."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from autotune.database import (
    Database,
    DatabaseError,
    comparable_costs,
    compiler_version,
    config_key,
    validate_record,
)
from autotune.record import TuningRecord, Workload
from compiler import zoo

ROOT = Path(__file__).resolve().parents[2]


def record_json(
    *,
    workload_key: str,
    task_name: str,
    target: dict[str, str],
    space_hash: str,
    config: Any,
    passes: list[str],
    costs: list[float],
    error_kind: str | None,
    error: str = "",
    flops: float = 0.0,
) -> dict:
    """The JSON object of a new record of this compiler's version (TuningRecord.new)."""
    return TuningRecord.new(
        Workload(workload_key, task_name, flops),
        space_hash,
        config,
        passes,
        costs,
        error_kind,
        error,
        target=target,
        compiler_version=compiler_version(),
    ).to_json()


def rec_json(i: int, costs: list[float] | None = None, error_kind: str | None = None, **kw) -> dict:
    r = record_json(
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


def rec(
    i: int, costs: list[float] | None = None, error_kind: str | None = None, **kw
) -> TuningRecord:
    return TuningRecord.from_json(rec_json(i, costs, error_kind, **kw))


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
        assert [r.config["tile"][0] for r in got] == [3, 1, 0, 2]
        assert got[0].to_json() == rec_json(3) | {"timestamp": got[0].timestamp}
        best = again.best("wk")
        assert best is not None and best.config["tile"] == [1, 1]
        assert again.best("missing") is None
        assert again.measured_keys("wk") == {config_key(rec(i).config) for i in (0, 1, 2, 3)}
        assert again.workloads() == {"wk", "other"}
    assert got[0].compiler_version == compiler_version() != ""


def test_paired_records_rank_by_their_ratio_to_the_baseline(tmp_path: Path) -> None:
    """A host twice as slow for a while (a shared VM): candidates timed then are compared with
    those timed before by their cost over the default schedule's, timed beside each."""
    db = Database(tmp_path / "db.jsonl")
    slow, fast = [2.0e-3], [1.0e-3]  # the baseline's time in each phase
    db.append(rec(0, costs=[2.0e-3], baseline_costs=slow))  # the default itself: ratio 1
    db.append(rec(1, costs=[1.8e-3], baseline_costs=slow))  # 0.9: the fastest
    db.append(rec(2, costs=[0.95e-3], baseline_costs=fast))  # 0.95: least seconds, but not best
    db.append(rec(3, costs=[0.5e-3], baseline_costs=fast, threads=2))  # another thread count
    db.append(rec(4, costs=[0.97e-3]))  # not paired: its own cost
    got = db.ranked("wk", threads=1)
    assert [r.config["tile"][0] for r in got] == [1, 2, 4, 0]
    costs = comparable_costs(got)  # in the fast phase's seconds (its least baseline)
    assert costs == pytest.approx([0.9e-3, 0.95e-3, 0.97e-3, 1.0e-3])
    best = db.best("wk", threads=2)
    assert best is not None and best.config["tile"] == [3, 1]
    assert comparable_costs([rec(5, costs=[], error_kind="timeout", baseline_costs=slow)]) == [
        math.inf
    ]


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
        assert [r.config["tile"][0] for r in fresh.records("wk")] == [1]
        best = fresh.best("wk")
        assert best is not None and best.config["tile"] == [1, 1]  # not the faster stale ones
        assert len(fresh.measured_keys("wk")) == 1
        assert [r.config["tile"][0] for r in fresh.records("wk", space_hash="old-space")] == [2]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "another compiler version" in messages[0] and "space hash" in messages[0]


def test_torn_last_line_is_ignored_by_readers_and_cut_by_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    with open(path, "ab") as f:
        f.write(json.dumps(rec_json(2)).encode()[:40])  # killed mid-write
    before = path.read_bytes()
    with pytest.warns(UserWarning, match="incomplete last line .*line 2"):
        db = Database(path)
    assert [r.config["tile"][0] for r in db.records()] == [1]
    assert path.read_bytes() == before  # a reader never writes
    with pytest.warns(UserWarning, match="cut off an incomplete last line"):
        db.append(rec(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn or malformed line is left
        assert [r.config["tile"][0] for r in Database(path).records()] == [1, 3]


def test_an_append_that_ends_between_the_read_and_the_lock_probe_is_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer preempted mid-append for a whole read, which then finishes and unlocks before
    the reader probes the lock: the read is torn but the file is whole; no warning, and the
    record is read on the next try."""
    import autotune.database as database

    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    line = (json.dumps(rec_json(2)) + "\n").encode()
    with open(path, "ab") as f:
        f.write(line[:40])  # what the reader sees of the append in progress
    real = database._write_locked

    def finish_then_probe(fd: int) -> bool:
        with open(path, "ab") as f:  # the writer wakes, writes the rest and unlocks
            f.write(line[40:])
        return real(fd)

    monkeypatch.setattr(database, "_write_locked", finish_then_probe)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = Database(path)
    monkeypatch.setattr(database, "_write_locked", real)
    assert [r.config["tile"][0] for r in Database(path).records()] == [1, 2]
    assert len(db.records()) in (1, 2)  # this read was torn; it may or may not have retried


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    path.write_text(
        json.dumps(rec_json(1)) + "\n" + json.dumps(rec_json(2))
    )  # e.g. written by hand
    before = path.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = Database(path)
        assert [r.config["tile"][0] for r in db.records()] == [1, 2]
        assert path.read_bytes() == before
        db.append(rec(3))  # starts on a line of its own
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b"" and [json.loads(x)["config"]["tile"][0] for x in lines[:-1]] == [
            1,
            2,
            3,
        ]
        assert [r.config["tile"][0] for r in Database(path).records()] == [1, 2, 3]


def _refuse_writes(
    monkeypatch: pytest.MonkeyPatch, err: int = errno.EROFS, only: Path | None = None
) -> None:
    """os.open as on a read-only file system (chmod does not stop root, who runs the tests)."""
    real_open = os.open

    def fake_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR) and (only is None or str(path) == str(only)):
            raise OSError(err, os.strerror(err), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


def test_a_read_only_database_with_a_torn_tail_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ro" / "db.jsonl"
    db = Database(path)
    db.append(rec(1))
    db.append(rec(2))
    with open(path, "ab") as f:
        f.write(json.dumps(rec_json(3)).encode()[:-7])
    before = path.read_bytes()
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        _refuse_writes(monkeypatch)
        with pytest.warns(UserWarning, match="incomplete last line"):
            ro = Database(path)
        assert [r.config["tile"][0] for r in ro.records()] == [1, 2]
        assert ro.best("wk") is not None and path.read_bytes() == before
        with pytest.raises(
            DatabaseError,
            match=rf"cannot write to the tuning database {path}: Read-only file system",
        ):
            ro.append(rec(4))
        assert path.read_bytes() == before
    finally:
        path.parent.chmod(0o755)


def read_tiles(path: Path, timeout: float = 300) -> list[int]:
    """Database(path)'s records (their tile sizes), loaded in a thread: a load that waits for a
    lock fails the test instead of hanging it."""
    got: list[Any] = []

    def load() -> None:
        try:
            got.append([r.config["tile"][0] for r in Database(path).records()])
        except BaseException as e:
            got.append(e)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout)
    assert not reader.is_alive(), "loading the database waits for a lock"
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0]


def test_a_reader_does_not_wait_for_an_append_in_progress(tmp_path: Path) -> None:
    """A writer holds LOCK_EX from its first byte to its fsync; a reader takes no lock: it sees
    the complete records only, and says nothing of the half-written line (not a crash's)."""
    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    line = (json.dumps(rec_json(2), sort_keys=True) + "\n").encode()
    with open(path, "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # as Database.append does
        f.write(line[:50])
        f.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert read_tiles(path) == [1]
            f.write(line[50:])
            f.flush()
            assert read_tiles(path) == [1, 2]  # whole, though its writer has not let go yet
            fcntl.flock(f, fcntl.LOCK_UN)


HOLDER = textwrap.dedent(
    """
    import fcntl, sys, time
    with open(sys.argv[1], "rb") as f:  # read access is all that LOCK_EX takes
        fcntl.flock(f, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(300)  # a hang guard for what waits for it
    """
)


@contextmanager
def lock_held_by_a_reader(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process that opened `path` read-only holds an exclusive flock on it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_held_by_a_reader_stalls_no_reader_and_times_writers_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "db.jsonl"
    db = Database(path, lock_timeout=0.3)
    db.extend([rec(1), rec(2)])
    before = path.read_bytes()
    with lock_held_by_a_reader(path) as holder:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert read_tiles(path) == [1, 2]
        with pytest.raises(
            DatabaseError,
            match=rf"cannot write to the tuning database {path}: its lock is held by "
            rf"pid {holder.pid} \(waited 0.3 s; ZIGGURAT_DB_LOCK_TIMEOUT sets how long\)$",
        ):
            db.append(rec(3))
        err = capsys.readouterr().err
        assert (
            err
            == f"ziggurat: waiting for the lock on {path} held by pid {holder.pid} (up to 0.3 s)\n"
        )
        assert path.read_bytes() == before
    db.append(rec(3))  # let go: the next append goes through
    assert read_tiles(path) == [1, 2, 3]


def test_the_lock_timeout_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    with lock_held_by_a_reader(path) as holder:
        monkeypatch.setenv("ZIGGURAT_DB_LOCK_TIMEOUT", "0")  # one try
        with pytest.raises(DatabaseError, match=rf"held by pid {holder.pid} \(waited 0 s"):
            Database(path).append(rec(2))
        for bad in ("soon", "-1", "nan"):
            monkeypatch.setenv("ZIGGURAT_DB_LOCK_TIMEOUT", bad)
            with pytest.raises(
                DatabaseError, match=f"ZIGGURAT_DB_LOCK_TIMEOUT='{bad}' is not a number of seconds"
            ):
                Database(path).append(rec(2))
    assert capsys.readouterr().err == ""  # no wait, no message
    assert read_tiles(path) == [1]


# -- malformed records -------------------------------------------------------------------------

DROP = object()  # a field left out
BAD_RECORDS = {
    "config is a list": ({"config": [3, 1]}, "config is a list, not an object"),
    "config is a string": ({"config": "tile=3"}, "config is a string, not an object"),
    "config knob of the wrong type": (
        {"config": {"tile": 3, "vector": 1}},
        "config.tile is not a list of integers",
    ),
    "costs is a string": ({"costs": "0.1"}, "costs is a string, not a list"),
    "costs NaN": ({"costs": [math.nan]}, "costs contain a non-finite value"),
    "baseline costs zero": ({"baseline_costs": [0.0]}, "baseline_costs contain a value <= 0"),
    "baseline costs a number": ({"baseline_costs": 0.1}, "baseline_costs is a number, not a list"),
    "costs infinite": ({"costs": [-math.inf]}, "costs contain a non-finite value"),
    "cost zero": ({"costs": [0.0]}, "costs contain a value <= 0"),
    "cost negative": ({"costs": [-1.0, 2.0]}, "costs contain a value <= 0"),
    "cost a boolean": ({"costs": [True]}, "costs contain a value that is not a number"),
    "no costs, no error": ({"costs": []}, "costs are empty for a successful measurement"),
    "error_kind a number": ({"error_kind": 3}, "error_kind is a number"),
    "workload_key a list": ({"workload_key": ["wk"]}, "workload_key is a list, not a string"),
    "threads a string": ({"threads": "2"}, "threads is not a positive integer"),
    "passes a string": ({"passes": "tile"}, "passes is not a list of strings"),
    "missing fields": ({"costs": DROP, "config": DROP}, "lacks config, costs"),
}


def _bad_line(change: dict) -> str:
    r = rec_json(9, costs=[0.001])  # the fastest record, were it applied
    r.update(change)
    r = {k: v for k, v in r.items() if v is not DROP}
    return json.dumps(r)  # NaN/Infinity as Python's json writes them


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_a_malformed_record_is_skipped_with_a_warning_naming_its_line(
    tmp_path: Path, name: str
) -> None:
    change, reason = BAD_RECORDS[name]
    path = tmp_path / "db.jsonl"
    good = [json.dumps(rec_json(i)) for i in (1, 2)]
    path.write_text("\n".join([good[0], _bad_line(change), good[1]]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        db = Database(path)
        best = db.best("wk")
        assert best is not None and best.config["tile"] == [1, 1]  # never the malformed one
        assert [r.config["tile"][0] for r in db.ranked("wk")] == [1, 2]
        assert db.measured_keys("wk") == {config_key(rec(i).config) for i in (1, 2)}
        assert db.workloads() == {"wk"} and len(db) == 2
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert f"{path}: skipping 1 malformed record(s): line 2: " in messages[0], messages
    assert reason in messages[0], messages


def test_malformed_records_get_one_warning_per_database_naming_every_line(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    lines = [
        json.dumps(rec_json(1)),
        _bad_line({"costs": [math.nan]}),
        "",
        "this is not JSON",
        "[1, 2]",
        json.dumps(rec_json(2)),
        _bad_line({"config": [1]}),
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning) as caught:
        db = Database(path)
    assert [r.config["tile"][0] for r in db.records()] == [1, 2]
    (message,) = [str(w.message) for w in caught]
    assert message == (
        f"{path}: skipping 4 malformed record(s): line 2: costs contain a non-finite value; "
        "line 4: not JSON; line 5: the line is a list, not a JSON object; "
        "line 7: config is a list, not an object"
    )


def test_append_refuses_a_record_that_readers_would_skip(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.jsonl")
    with pytest.raises(ValueError, match="record cannot be written: costs contain a value <= 0"):
        db.append(dataclasses.replace(rec(1), costs=[0.0]))
    with pytest.raises(ValueError, match="record cannot be written: config is a list"):
        db.append(dataclasses.replace(rec(1), config=[1, 1]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Out of range float values"):
        db.append(dataclasses.replace(rec(1), costs=[math.nan]))
    with pytest.raises(ValueError, match="costs contain a value <= 0"):  # nor read as a record
        TuningRecord.from_json(rec_json(1, costs=[0.0]))
    assert not (tmp_path / "db.jsonl").exists() and len(db) == 0


def test_validate_record_accepts_what_tuning_record_writes() -> None:
    one = rec_json(1) | {"note": "a field of another tool"}  # kept as it was read
    assert TuningRecord.from_json(one).to_json() == one
    assert validate_record(json.loads(json.dumps(rec_json(1)))) is None
    assert validate_record(rec_json(0, costs=[], error_kind="timeout")) is None
    assert (
        validate_record(
            rec_json(1) | {"threads": 2, "config": {"order": [1, 0], "pack": [], "reg": [1, 1]}}
        )
        is None
    )
    assert (
        validate_record(rec_json(1) | {"config": {"order": [1, 1]}})
        == "config.order is not a permutation of the loops"
    )
    assert validate_record(rec_json(1) | {"config": {"reg": [1], "tile": [0, 0]}}) is not None


# -- paths and write failures ----------------------------------------------------------------


def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match=rf"tuning database {tmp_path} is a directory"):
        Database(tmp_path)


def test_an_unreadable_database_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.jsonl"
    Database(path).append(rec(1))
    real_open = os.open

    def fake_open(p, flags, *args, **kwargs):
        if str(p) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(p))
        return real_open(p, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    with pytest.raises(
        DatabaseError, match=rf"cannot read the tuning database {path}: Permission denied"
    ):
        Database(path)


def _fail_writes_to(
    monkeypatch: pytest.MonkeyPatch, path: Path, err: int, after: int | None = 100
) -> None:
    """os.write to `path` stores `after` bytes, then fails with `err`; `after=None`: fsync fails."""
    real_write, real_fsync = os.write, os.fsync

    def is_db(fd: int) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:
            return False

    def fake_write(fd: int, data) -> int:
        if is_db(fd) and after is not None and len(data) > 1:
            real_write(fd, bytes(data[:after]))
            raise OSError(err, os.strerror(err))
        return real_write(fd, data)

    def fake_fsync(fd: int) -> None:
        if is_db(fd) and after is None:
            raise OSError(err, os.strerror(err))
        real_fsync(fd)

    monkeypatch.setattr(os, "write", fake_write)
    monkeypatch.setattr(os, "fsync", fake_fsync)


@pytest.mark.parametrize(
    ("err", "after"),
    [(errno.ENOSPC, 100), (errno.ENOSPC, 0), (errno.EIO, None)],
    ids=["disk full mid-line", "disk full at once", "fsync fails"],
)
def test_a_failed_append_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int, after: int | None
) -> None:
    path = tmp_path / "db.jsonl"
    db = Database(path)
    db.append(rec(1))
    before = path.read_bytes()
    with monkeypatch.context() as m:
        _fail_writes_to(m, path, err, after)
        with pytest.raises(
            DatabaseError, match=rf"cannot write to the tuning database {path}: {os.strerror(err)}"
        ):
            db.append(rec(2, error="x" * 5000))
    assert path.read_bytes() == before
    assert [r.config["tile"][0] for r in db.records()] == [1]  # not kept as written either
    db.append(rec(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r.config["tile"][0] for r in Database(path).records()] == [1, 3]


WRITER = textwrap.dedent(
    """
    import sys
    from autotune.database import Database, config_key
    from autotune.record import TuningRecord, Workload

    path, total = sys.argv[1], int(sys.argv[2])
    slow = len(sys.argv) > 3  # past 30 records, pause between appends: killed before the end
    db = Database(path)
    done = db.measured_keys("wk")
    for i in range(total):
        config = {"i": i}
        if config_key(config) in done:
            continue
        db.append(TuningRecord.new(Workload("wk", "t"), "h", config, [], [float(i + 1)],
                                   None, "x" * 3000, target={}))
        if slow and i >= 30:
            import time
            time.sleep(0.02)
    """
)


def test_resume_after_sigkill_mid_append(tmp_path: Path) -> None:
    path = tmp_path / "db.jsonl"
    total = 300
    cmd = [sys.executable, "-c", WRITER, str(path), str(total)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # slowed past 30 records, so that a busy host cannot let it finish before the kill
    proc = subprocess.Popen([*cmd, "slow"], env=env)
    deadline = time.monotonic() + 300  # a guard against a hang, not a speed limit
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 30:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line may or may not be there
        before = [r.config["i"] for r in Database(path).records()]
    assert 30 <= len(before) < total, len(before)  # killed mid-run
    assert before == list(range(len(before)))
    subprocess.run(cmd, env=env, check=True, timeout=600)  # resume
    after = [r.config["i"] for r in Database(path).records("wk")]
    assert after == list(range(total))  # every record exactly once, in order


def test_append_fills_in_version_target_and_time(tmp_path: Path) -> None:
    db = Database(tmp_path / "db.jsonl")
    db.append(TuningRecord(Workload("wk"), "h", {"a": 1}, [], [1.0]))
    (r,) = Database(tmp_path / "db.jsonl").records()
    assert r.compiler_version == compiler_version()
    assert r.target is not None and r.target["cpu"] and r.timestamp is not None
    assert Database(tmp_path / "db.jsonl").measured_keys("wk") == {'{"a":1}'}


# -- concurrency: writers, readers and a crasher on one database ---------------------------------
#
# Concurrent writers and readers on one tuning database lose no record and see no torn one.
#
# Writer processes append records (some of about 200 KB, so that one append is many pages) and
# reopen the database now and then, as a resumed tuning run does; a "crasher" leaves a torn line
# now and then, as a writer killed mid-append does; reader processes reload the database as fast
# as they can. Every reader must see, for each writer, a prefix of its records that only grows,
# each record whole, and no warning but the crasher's torn line; at the end the file holds every
# record exactly once.

WRITERS, RECORDS, BIG_EVERY, BIG = 4, 120, 8, 200_000
READERS, CRASHES, CRASH_BYTES = 3, 6, 777

STRESS_COMMON = textwrap.dedent(
    f"""
    import json, os, sys, time, warnings
    from pathlib import Path
    from autotune.database import Database
    from autotune.record import TuningRecord, Workload

    WRITERS, RECORDS, BIG_EVERY, BIG = {WRITERS}, {RECORDS}, {BIG_EVERY}, {BIG}
    CRASH_BYTES = {CRASH_BYTES}

    def payload(w, i):
        return ("w%d-i%d:" % (w, i)).ljust(BIG if i % BIG_EVERY == 0 else 100 + w, "x")

    def wait_for(path):
        while not os.path.exists(path):
            time.sleep(0.002)
    """
)

STRESS_WRITER = STRESS_COMMON + textwrap.dedent(
    """
    path, w, go, crashed = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    warnings.simplefilter("ignore")  # "cut off an incomplete last line": the crasher's
    wait_for(go)
    db = Database(path)
    for i in range(RECORDS):
        if i % 25 == 24:
            db = Database(path)  # a resumed run loads while the others append
        if i == RECORDS - 1:
            wait_for(crashed)  # so that a writer comes after the last torn line, and cuts it
        db.append(TuningRecord.new(Workload("wk", "t"), "h", {"w": w, "i": i}, [], [1.0 + i],
                                   None, payload(w, i), target={}))
    """
)

STRESS_CRASHER = STRESS_COMMON + textwrap.dedent(
    """
    path, crashes, go, crashed = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    warnings.simplefilter("ignore")
    wait_for(go)
    db = Database(path)
    torn = b'{"workload_key": "wk", "error": "' + b"y" * CRASH_BYTES
    for _ in range(crashes):
        time.sleep(0.05)
        db._append_line(torn[:CRASH_BYTES])  # what a writer killed mid-line leaves: no newline
    Path(crashed).touch()
    """
)

STRESS_READER = STRESS_COMMON + textwrap.dedent(
    """
    path, ready, stop, out = sys.argv[1:5]
    problems, seen, during = [], {}, 0
    allowed = "incomplete last line (%d bytes" % CRASH_BYTES
    while True:
        last = os.path.exists(stop)  # one more read after the writers are done
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            records = Database(path).records() if os.path.exists(path) else []
        problems += [str(m.message)[-300:] for m in caught if allowed not in str(m.message)]
        mine = {}
        for r in records:
            w, i = r.config["w"], r.config["i"]
            if r.error != payload(w, i) or r.costs != [1.0 + i]:
                problems.append("record w%d i%d is not the one written" % (w, i))
            mine.setdefault(w, []).append(i)
        for w, got in mine.items():
            if got != list(range(len(got))):
                problems.append("writer %d: not a prefix: %s" % (w, got[:5] + ["..."] + got[-5:]))
            if len(got) < seen.get(w, 0):
                problems.append("writer %d: %d records, %d before" % (w, len(got), seen[w]))
            seen[w] = len(got)
        during += 0 < len(records) < WRITERS * RECORDS  # a read while the writers wrote
        Path(ready).touch()
        if last or len(problems) > 20:
            break
    Path(out).write_text(json.dumps({"during": during, "problems": problems, "seen": seen}))
    """
)


def test_concurrent_writers_and_readers_lose_nothing(tmp_path: Path) -> None:
    path, go, stop = tmp_path / "db.jsonl", tmp_path / "go", tmp_path / "stop"
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def start(script: str, *args: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=env)

    readers = [
        start(STRESS_READER, path, tmp_path / f"ready{k}", stop, tmp_path / f"reader{k}.json")
        for k in range(READERS)
    ]
    crashed = tmp_path / "crashed"
    writers = [start(STRESS_WRITER, path, w, go, crashed) for w in range(WRITERS)]
    writers.append(start(STRESS_CRASHER, path, CRASHES, go, crashed))
    procs = readers + writers
    try:
        deadline = time.monotonic() + 600
        while not all((tmp_path / f"ready{k}").exists() for k in range(READERS)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in readers)
            time.sleep(0.01)
        go.touch()  # the writers start while every reader is reading
        for p in writers:
            assert p.wait(timeout=600) == 0  # hang guards, not speed limits
        stop.touch()
        for p in readers:
            assert p.wait(timeout=600) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    results = [json.loads((tmp_path / f"reader{k}.json").read_text()) for k in range(READERS)]
    for r in results:
        assert r["problems"] == [], r["problems"]
        assert r["seen"] == {str(w): RECORDS for w in range(WRITERS)}, r["seen"]  # the last read
    assert sum(r["during"] for r in results) >= 3, results  # they read while the writers wrote
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn line and no malformed record is left
        records = Database(path).records()
    got = sorted((r.config["w"], r.config["i"]) for r in records)
    assert got == [(w, i) for w in range(WRITERS) for i in range(RECORDS)]  # none lost, none twice
    data = path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == WRITERS * RECORDS
    assert len(data) > WRITERS * (RECORDS // BIG_EVERY) * BIG


# -- the CLI: `--db` paths, write failures, malformed records on `run --db` and `tune` resume ----


def matmul_model(path: Path, n: int = 16) -> Path:
    onnx.save(zoo.matmul(n), path)
    return path


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A one-kernel model, its task and its search space (to write records by hand)."""
    from autotune.space import SearchSpace
    from autotune.task import anchor_info, extract_tasks

    model = matmul_model(tmp_path_factory.mktemp("mm") / "mm.onnx")
    (task,) = extract_tasks(str(model))
    space = SearchSpace(anchor_info(task))
    default = space.default_config()
    rng = random.Random(0)
    other = next(
        c for c in (space.sample(rng) for _ in range(1000)) if space.key(c) != space.key(default)
    )
    return {"model": str(model), "task": task, "space": space, "default": default, "other": other}


def mm_record(mm: dict, config: Any, costs: Any) -> dict:
    task, space = mm["task"], mm["space"]
    r = record_json(
        workload_key=task.workload_key,
        task_name=task.name,
        target={"cpu": "test", "features": ""},
        space_hash=space.space_hash(),
        config=config,
        passes=space.to_passes(mm["default"], task.anchor),
        costs=[1.0],
        error_kind=None,
        flops=task.flops,
    )
    r["costs"] = costs
    return r


def write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def call(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """ziggurat's main() in-process -> (exit code, stdout, stderr)."""
    from compiler.cli.main import main

    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(result: tuple[int, str, str], message: str) -> None:
    rc, _, err = result
    assert rc == 1, (rc, err)
    assert f"ziggurat: error: {message}" in err, err
    assert "Traceback" not in err and "internal error" not in err, err


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """measure.measure faked (every candidate: 0.1 ms): tune runs in a blink; counts candidates."""
    from autotune import measure

    calls: list[int] = []

    def fake(task, candidates, **kwargs):
        calls.append(len(candidates))
        return [measure.MeasureResult([1e-4]) for _ in candidates]

    monkeypatch.setattr(measure, "measure", fake)
    return calls


def tune(
    capsys: pytest.CaptureFixture[str], mm: dict, db: Path | str, trials: int = 2
) -> tuple[int, str, str]:
    return call(capsys, "tune", mm["model"], "--trials", trials, "--db", db, "--tuner", "random")


def test_cli_tune_db_naming_a_directory(
    capsys: pytest.CaptureFixture[str], mm: dict, tmp_path: Path, measured: list[int]
) -> None:
    assert_user_error(
        tune(capsys, mm, tmp_path),
        f"tuning database {tmp_path} is a directory, not a JSON-lines file",
    )
    assert not measured


def test_cli_tune_read_only_db(
    capsys: pytest.CaptureFixture[str],
    mm: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measured: list[int],
) -> None:
    db = write_lines(tmp_path / "db.jsonl", [mm_record(mm, mm["default"], [1e-3])])
    db.chmod(0o444)
    before = db.read_bytes()
    _refuse_writes(monkeypatch, only=db)  # root ignores the mode: a read-only file system
    assert_user_error(
        tune(capsys, mm, db), f"cannot write to the tuning database {db}: Read-only file system"
    )
    assert not measured  # it says so before the first measurement, not after
    assert db.read_bytes() == before


def test_cli_tune_disk_full(
    capsys: pytest.CaptureFixture[str],
    mm: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measured: list[int],
) -> None:
    db = write_lines(tmp_path / "db.jsonl", [mm_record(mm, mm["default"], [1e-3])])
    before = db.read_bytes()
    _fail_writes_to(monkeypatch, db, errno.ENOSPC)
    assert_user_error(
        tune(capsys, mm, db), f"cannot write to the tuning database {db}: No space left on device"
    )
    assert db.read_bytes() == before  # no torn line to glue the next record onto
    monkeypatch.undo()
    assert tune(capsys, mm, db)[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(Database(db).records()) == 3


def test_cli_run_and_compile_db_read_while_a_reader_holds_the_lock(
    mm: dict, tmp_path: Path
) -> None:
    """Read-only use of --db takes no lock: a reader that holds LOCK_EX cannot stall it."""
    from tests.support.cli import ziggurat_cmd

    db = write_lines(tmp_path / "db.jsonl", [mm_record(mm, mm["default"], [1e-3])])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(2))
    np.savez(tmp_path / "in.npz", a=a, b=b)
    out = tmp_path / "out.npz"
    with lock_held_by_a_reader(db):
        for argv in (
            ["compile", mm["model"], "--emit", "loops", "--db", db],
            ["run", mm["model"], "--inputs", tmp_path / "in.npz", "--output", out, "--db", db],
        ):
            r = subprocess.run(
                [*ziggurat_cmd(), *map(str, argv)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=120,  # a hang guard: readers waited for the lock
            )
            assert r.returncode == 0, r.stderr
            assert "ziggurat: 1 of 1 kernels use tuned schedules" in r.stderr, r.stderr
            assert "waiting" not in r.stderr and "warning" not in r.stderr, r.stderr
    with np.load(out) as got:
        np.testing.assert_allclose(got["y"], a @ b, rtol=1e-4, atol=1e-5)


def test_cli_tune_gives_up_on_a_lock_held_by_a_reader(
    capsys: pytest.CaptureFixture[str],
    mm: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measured: list[int],
) -> None:
    db = write_lines(tmp_path / "db.jsonl", [mm_record(mm, mm["default"], [1e-3])])
    before = db.read_bytes()
    monkeypatch.setenv("ZIGGURAT_DB_LOCK_TIMEOUT", "0.2")
    with lock_held_by_a_reader(db) as holder:
        result = tune(capsys, mm, db)
    assert_user_error(
        result,
        f"cannot write to the tuning database {db}: its lock is held by pid {holder.pid} "
        "(waited 0.2 s; ZIGGURAT_DB_LOCK_TIMEOUT sets how long)\n",
    )
    assert f"ziggurat: waiting for the lock on {db} held by pid {holder.pid}" in result[2]
    assert result[2].count("error:") == 1 and db.read_bytes() == before


@pytest.mark.parametrize(
    "name",
    [
        "back\\slash.jsonl",
        "new\nline.jsonl",
        'a "quoted" name.jsonl',
        "C:\\new\\t.jsonl",
        "carriage\rreturn.jsonl",  # the CLI hands the pass over as an object, not option text
    ],
)
def test_cli_db_path_with_a_backslash_newline_or_quote(
    capsys: pytest.CaptureFixture[str], mm: dict, tmp_path: Path, name: str
) -> None:
    db = write_lines(tmp_path / name, [mm_record(mm, mm["default"], [1e-3])])
    rc, out, err = call(capsys, "compile", mm["model"], "--emit", "loops", "--db", db)
    assert rc == 0, err
    assert "ziggurat: 1 of 1 kernels use tuned schedules" in err, err


def test_cli_run_db_with_malformed_records(
    capsys: pytest.CaptureFixture[str], mm: dict, tmp_path: Path
) -> None:
    db = write_lines(
        tmp_path / "db.jsonl",
        [
            mm_record(mm, mm["default"], [1e-3]),
            mm_record(mm, list(mm["other"].values()), [1e-9]),
            mm_record(mm, mm["other"], [0.0]),
            mm_record(mm, mm["other"], "fast"),
        ],
    )
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(2))
    np.savez(tmp_path / "in.npz", a=a, b=b)
    rc, out, err = call(
        capsys,
        "run",
        mm["model"],
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        tmp_path / "out.npz",
        "--db",
        db,
    )
    assert rc == 0, err
    assert err.count("ziggurat: warning:") == 1, err
    assert (
        f"ziggurat: warning: {db}: skipping 3 malformed record(s): "
        "line 2: config is a list, not an object; "
        "line 3: costs contain a value <= 0; line 4: costs is a string, not a list\n"
    ) in err
    assert "ziggurat: 1 of 1 kernels use tuned schedules" in err, err
    with np.load(tmp_path / "out.npz") as out_npz:
        np.testing.assert_allclose(out_npz["y"], a @ b, rtol=1e-4, atol=1e-5)


def test_cli_a_malformed_fastest_record_is_never_applied(
    capsys: pytest.CaptureFixture[str], mm: dict, tmp_path: Path
) -> None:
    def loops(*records: dict) -> str:
        db = write_lines(tmp_path / f"db{len(records)}.jsonl", list(records))
        rc, out, err = call(capsys, "compile", mm["model"], "--emit", "loops", "--db", db)
        assert rc == 0 and "1 of 1 kernels use tuned schedules" in err, err
        return out

    good = mm_record(mm, mm["default"], [1e-3])
    fast_other = mm_record(mm, mm["other"], [1e-9])
    assert loops(good, fast_other) != loops(good)  # the other config schedules differently
    bad = [mm_record(mm, mm["other"], c) for c in ([0.0], [-1.0], [math.nan], [math.inf], ["1e-9"])]
    assert loops(good, *bad) == loops(good)
    # well-formed, but no config of this space: the fastest record that is one still applies
    assert loops(good, mm_record(mm, {"i": 1}, [1e-9])) == loops(good)


def test_cli_tune_resumes_past_malformed_records(
    capsys: pytest.CaptureFixture[str], mm: dict, tmp_path: Path, measured: list[int]
) -> None:
    db = write_lines(
        tmp_path / "db.jsonl",
        [
            mm_record(mm, mm["default"], [1e-3]),
            mm_record(mm, list(mm["default"].values()), [1e-9]),  # config a list
            mm_record(mm, {"i": 1}, [1e-9]),  # well-formed, but no config of this space
            mm_record(mm, mm["other"], [math.nan]),
        ],
    )
    before = db.read_bytes()
    rc, out, err = tune(capsys, mm, db, trials=3)
    assert rc == 0, err
    assert (
        err.count("ziggurat: warning:") == 1 and "skipping 2 malformed record(s): line 2: " in err
    ), err
    data = db.read_bytes()
    assert data.startswith(before)  # the malformed lines stay; loading never rewrites
    new = [json.loads(x) for x in data[len(before) :].splitlines()]
    assert len(new) == 3 and sum(measured) == 3
    space = mm["space"]
    keys = {space.key(r["config"]) for r in new}
    assert len(keys) == 3 and space.key(mm["default"]) not in keys  # resumed: the default is known
