"""`ziggurat tune` and `--db` as users meet them (subprocesses, a single-node 64x64 MatMul model):
the progress line and summary table, `--plot`, tuned schedules that still compute the right
result, clear messages for an empty or missing database, and a tuning run killed with SIGKILL that
resumes with no record lost, duplicated or torn."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo

pytest.importorskip("xgboost")

REPO = Path(__file__).resolve().parents[2]
HAS_MPL = importlib.util.find_spec("matplotlib") is not None
DB_LINE = re.compile(r"ziggurat: (\d+) of (\d+) kernels use tuned schedules; (\d+) fell back to the default schedule")


def ziggurat_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ziggurat"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "compiler.cli"]


def run_cli(*args: str | Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ziggurat_cmd(), *map(str, args)], capture_output=True, text=True, cwd=REPO, timeout=timeout
    )


def matmul_model(path: Path, n: int = 64) -> Path:
    onnx.save(zoo.matmul(n), path)
    return path


def complete_lines(path: Path) -> list[bytes]:
    """The newline-terminated lines (a torn last line, if any, is not one)."""
    data = path.read_bytes() if path.exists() else b""
    return data.split(b"\n")[:-1]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("tune")
    model = matmul_model(d / "mm.onnx")
    db, png = d / "db.jsonl", d / "curves.png"
    plot = ["--plot", png] if HAS_MPL else []
    r = run_cli("tune", model, "--trials", "6", "--db", db, "--seed", "1", *plot)
    return {"dir": d, "model": model, "db": db, "png": png, "result": r}


def test_tune_prints_progress_and_summary(tuned: dict) -> None:
    r = tuned["result"]
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    progress = r.stderr.split("\r")[-1]  # the live line, as last redrawn
    for piece in ("task 1/", "trials", "best", "GFLOP/s", "left"):
        assert piece in progress, progress
    assert "trials 6/6" in progress, progress
    header, *rows = [line for line in r.stdout.splitlines() if line.strip() and "->" not in line]
    assert re.search(r"task\s+weight\s+trials\s+best GFLOP/s\s+latency us", header), r.stdout
    assert len(rows) == 1 and rows[0].startswith("matmul 64x64 k64"), r.stdout
    _, weight, trials, gflops, _ = rows[0].rsplit(None, 4)
    assert (weight, trials) == ("1", "6") and float(gflops) > 0, rows[0]
    records = [json.loads(line) for line in complete_lines(tuned["db"])]
    assert len(records) == 6 and tuned["db"].read_bytes().endswith(b"\n")


@pytest.mark.skipif(not HAS_MPL, reason="--plot needs matplotlib (pip install 'ziggurat[tune]')")
def test_tune_plot_writes_a_png(tuned: dict) -> None:
    assert tuned["result"].returncode == 0, tuned["result"].stderr
    assert f"tuning curves -> {tuned['png']}" in tuned["result"].stdout
    data = tuned["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_run_with_the_database_uses_tuned_schedules_and_matches_onnxruntime(tuned: dict) -> None:
    import onnxruntime as ort

    assert tuned["result"].returncode == 0, tuned["result"].stderr
    d = tuned["dir"]
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal((64, 64), dtype=np.float32) for k in ("a", "b")}
    np.savez(d / "in.npz", **feeds)
    r = run_cli("run", tuned["model"], "--inputs", d / "in.npz", "--output", d / "out.npz", "--db", tuned["db"])
    assert r.returncode == 0, r.stderr
    m = DB_LINE.search(r.stderr)
    assert m, r.stderr
    tuned_n, total, fallback = map(int, m.groups())
    assert tuned_n >= 1 and tuned_n + fallback == total == 1, r.stderr
    (ref,) = ort.InferenceSession(str(tuned["model"]), providers=["CPUExecutionProvider"]).run(None, feeds)
    with np.load(d / "out.npz") as out:
        np.testing.assert_allclose(out["y"], ref, rtol=1e-4, atol=1e-5)


def test_run_with_an_empty_database_falls_back_everywhere(tuned: dict, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "in.npz", a=rng.standard_normal((64, 64), dtype=np.float32), b=rng.standard_normal((64, 64), dtype=np.float32))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = run_cli("run", tuned["model"], "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz", "--db", empty)
    assert r.returncode == 0, r.stderr
    assert "ziggurat: 0 of 1 kernels use tuned schedules; 1 fell back to the default schedule" in r.stderr


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_run_with_a_bad_database_path_is_a_clear_error(tuned: dict, tmp_path: Path, kind: str) -> None:
    """A mistyped --db must not silently run untuned: one `error:` line, exit 1, no traceback."""
    db = tmp_path / "no-such-db.jsonl"
    if kind == "directory":
        db.mkdir()
    np.savez(tmp_path / "in.npz", a=np.ones((64, 64), np.float32), b=np.ones((64, 64), np.float32))
    r = run_cli("run", tuned["model"], "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz", "--db", db)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert "ziggurat: error:" in r.stderr and str(db) in r.stderr, r.stderr
    assert ("not found" if kind == "missing" else "directory") in r.stderr, r.stderr
    if kind == "missing":
        assert not db.exists()  # reading a database never creates it


def test_tune_killed_with_sigkill_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    model = matmul_model(tmp_path / "mm.onnx")
    db = tmp_path / "db.jsonl"
    proc = subprocess.Popen(
        [*ziggurat_cmd(), "tune", str(model), "--trials", "40", "--db", str(db)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 180
        while len(complete_lines(db)) < 5:
            assert proc.poll() is None, f"tune ended before it was killed: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "no 5 records within 180 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = complete_lines(db)
    assert 5 <= len(before) < 40
    old = [json.loads(line) for line in before]  # every complete line is a whole record

    r = run_cli("tune", model, "--trials", "8", "--db", db)
    assert r.returncode == 0, r.stderr
    data = db.read_bytes()
    assert data.endswith(b"\n"), "torn last line"
    after = [json.loads(line) for line in data.split(b"\n")[:-1]]
    assert after[: len(old)] == old, "a record measured before the kill was lost or changed"
    assert len(after) == len(old) + 8, (len(old), len(after))
    keys = [(r["workload_key"], json.dumps(r["config"], sort_keys=True)) for r in after]
    assert len(set(keys)) == len(keys), "a config was measured twice"


def test_tune_for_two_threads_then_run_with_them(tmp_path: Path) -> None:
    """--threads 2 tunes the parallel knob (records say so) and run --threads 2 applies them."""
    model = matmul_model(tmp_path / "mm.onnx", n=128)
    db = tmp_path / "db.jsonl"
    r = run_cli("tune", model, "--trials", "6", "--db", db, "--threads", "2", "--transfer")
    assert r.returncode == 0, r.stderr
    assert "on 2 thread(s) with transfer learning" in r.stderr
    records = [json.loads(line) for line in complete_lines(db)]
    assert len(records) == 6 and all("parallel" in rec["config"] for rec in records)
    assert any(rec["config"]["parallel"] for rec in records)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((128, 128)).astype(np.float32)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    r = run_cli("run", model, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz", "--db", db, "--threads", "2")
    assert r.returncode == 0, r.stderr
    assert "1 of 1 kernels use tuned schedules" in r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("command", ["tune", "bench", "run", "compile"])
def test_bad_thread_count_is_a_clear_error(command: str, tmp_path: Path) -> None:
    model = matmul_model(tmp_path / "mm.onnx")
    extra = {"tune": ["--trials", "1", "--db", tmp_path / "db.jsonl"], "run": ["--inputs", "x.npz", "--output", "y.npz"]}
    r = run_cli(command, model, "--threads", "0", *extra.get(command, []))
    assert r.returncode == 1 and "--threads must be at least 1 (got 0)" in r.stderr
