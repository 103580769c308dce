"""`ziggurat bench DIR`: every model of a directory timed against onnxruntime at 1 and 2
threads, as one table of ratios with their geometric mean; a model that fails is a row that
says why, and the others still run."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import onnx
import pytest

from compiler import zoo
from compiler.benchmark import directory_table
from tests.support.cli import ziggurat_cmd


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("models")
    onnx.save(zoo.matmul(32), d / "a_matmul.onnx")
    onnx.save(zoo.mlp(), d / "b_mlp.onnx")
    (d / "c_broken.onnx").write_bytes(b"not a model")
    (d / "notes.txt").write_text("ignored")
    return d


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ziggurat_cmd(), "bench", *map(str, args)], capture_output=True, text=True, timeout=600
    )


def test_a_directory_is_one_table_of_ratios(models: Path) -> None:
    r = run(models, "--seconds", "0.05")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "ratio 1t" in lines[0] and "ratio 2t" in lines[0] and "speed-up ours" in lines[0]
    assert lines[1].startswith("a_matmul") and lines[2].startswith("b_mlp")
    assert lines[3].startswith("c_broken") and "error:" in lines[3]
    assert lines[4].startswith("geomean") and lines[5].startswith("cpu: ")
    assert "bench: a_matmul.onnx" in r.stderr and "Traceback" not in r.stderr


def test_json_keeps_every_run(models: Path) -> None:
    r = run(models, "--seconds", "0.05", "--json", "--threads", "2")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["model"] for row in rows] == ["a_matmul", "b_mlp", "c_broken"]
    for row in rows[:2]:
        assert set(row["runs"]) == {"1", "2"}
        assert all(run["max_abs_err"] < 1e-3 for run in row["runs"].values())
    assert "error" in rows[2]


def test_a_directory_without_models_is_a_clear_error(tmp_path: Path) -> None:
    r = run(tmp_path)
    assert r.returncode != 0 and "no .onnx files in the directory" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_geomean_is_of_the_ratios_of_the_models_that_ran() -> None:
    def result(ours: float, ort: float) -> dict:
        return {"ziggurat_ms": ours, "onnxruntime_ms": ort, "ratio": ours / ort}

    rows = [
        {"model": "x", "runs": {1: result(2.0, 1.0), 2: result(1.0, 1.0)}},
        {"model": "y", "runs": {1: result(1.0, 2.0), 2: result(1.0, 4.0)}},
        {"model": "z", "error": "CompileError: no"},
    ]
    table = directory_table(rows, (1, 2)).splitlines()
    geo = table[4].split()
    assert geo[0] == "geomean"
    assert float(geo[1]) == pytest.approx(math.sqrt(2.0 * 0.5), abs=0.01)
    assert float(geo[2]) == pytest.approx(math.sqrt(1.0 * 0.25), abs=0.01)
    assert "2.00x" in table[1] and "1.00x" in table[1]  # ours 2 -> 1 ms, ort 1 -> 1 ms
