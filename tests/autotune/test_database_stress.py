"""Concurrent writers and readers on one tuning database lose no record and see no torn one.

Writer processes append records (some of about 200 KB, so that one append is many pages) and
reopen the database now and then, as a resumed tuning run does; a "crasher" leaves a torn line
now and then, as a writer killed mid-append does; reader processes reload the database as fast
as they can. Every reader must see, for each writer, a prefix of its records that only grows,
each record whole, and no warning but the crasher's torn line; at the end the file holds every
record exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

from autotune.database import Database

ROOT = Path(__file__).resolve().parents[2]
WRITERS, RECORDS, BIG_EVERY, BIG = 4, 120, 8, 200_000
READERS, CRASHES, CRASH_BYTES = 3, 6, 777

COMMON = textwrap.dedent(
    f"""
    import json, os, sys, time, warnings
    from pathlib import Path
    from autotune.database import Database, make_record

    WRITERS, RECORDS, BIG_EVERY, BIG = {WRITERS}, {RECORDS}, {BIG_EVERY}, {BIG}
    CRASH_BYTES = {CRASH_BYTES}

    def payload(w, i):
        return ("w%d-i%d:" % (w, i)).ljust(BIG if i % BIG_EVERY == 0 else 100 + w, "x")

    def wait_for(path):
        while not os.path.exists(path):
            time.sleep(0.002)
    """
)

WRITER = COMMON + textwrap.dedent(
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
        db.append(make_record(workload_key="wk", task_name="t", target={}, space_hash="h",
                              config={"w": w, "i": i}, passes=[], costs=[1.0 + i],
                              error_kind=None, error=payload(w, i)))
    """
)

CRASHER = COMMON + textwrap.dedent(
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

READER = COMMON + textwrap.dedent(
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
            w, i = r["config"]["w"], r["config"]["i"]
            if r["error"] != payload(w, i) or r["costs"] != [1.0 + i]:
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
        start(READER, path, tmp_path / f"ready{k}", stop, tmp_path / f"reader{k}.json")
        for k in range(READERS)
    ]
    crashed = tmp_path / "crashed"
    writers = [start(WRITER, path, w, go, crashed) for w in range(WRITERS)]
    writers.append(start(CRASHER, path, CRASHES, go, crashed))
    procs = readers + writers
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{k}").exists() for k in range(READERS)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in readers)
            time.sleep(0.01)
        go.touch()  # the writers start while every reader is reading
        for p in writers:
            assert p.wait(timeout=120) == 0
        stop.touch()
        for p in readers:
            assert p.wait(timeout=60) == 0
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
    got = sorted((r["config"]["w"], r["config"]["i"]) for r in records)
    assert got == [(w, i) for w in range(WRITERS) for i in range(RECORDS)]  # none lost, none twice
    data = path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == WRITERS * RECORDS
    assert len(data) > WRITERS * (RECORDS // BIG_EVERY) * BIG
