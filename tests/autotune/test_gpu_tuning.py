"""Tuning for a GPU target end to end (autotune/tuning_target.py): the GPU space, features and
measurement in the tuner's loop on OpenCL (PoCL here), records that name the device, and tuned
GPU schedules applied to a model that still matches onnxruntime. The parts have their own
tests: test_gpu_space.py, test_gpu_features.py, measure/test_gpu_measure.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from autotune.apply_pass import tuned_schedules
from autotune.database import Database
from autotune.task import anchor_info, extract_tasks
from autotune.transfer import transfer_model
from autotune.tune_model import tune_tasks
from autotune.tuning_target import tuning_target
from compiler.backends.gpu.opencl_runtime import opencl_available
from compiler.model import compile_model
from tests.support.cli import ziggurat_cmd
from tests.support.references import graph_model, onnxruntime_run

F = TensorProto.FLOAT
PRESET = "opencl-gpu"  # the SIMT schedules (staging, splits) a GPU gets, run on PoCL
needs_opencl = pytest.mark.skipif(
    opencl_available() is not None, reason=f"OpenCL: {opencl_available()}"
)


def model() -> onnx.ModelProto:
    """A matmul (staged and register-tiled on a GPU) and a softmax (split row reductions)."""
    rng = np.random.default_rng(0)
    return graph_model(
        [
            helper.make_node("MatMul", ["a", "b"], ["y"]),
            helper.make_node("Softmax", ["y"], ["z"], axis=-1),
        ],
        [("a", F, [32, 64])],
        [("z", F)],
        [("b", rng.standard_normal((64, 48)).astype(np.float32))],
    )


@pytest.fixture(scope="module")
def tuned_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("gpu-tune") / "tune.jsonl"
    target = tuning_target("opencl", PRESET)
    tune_tasks(extract_tasks(model()), str(db), 12, target=target, batch=4, progress=False)
    return db


@needs_opencl
def test_records_name_the_device_preset_and_l2_policy(tuned_db: Path) -> None:
    records = [json.loads(line) for line in tuned_db.read_text().splitlines()]
    assert len(records) == 12
    assert all(r["error_kind"] is None and r["costs"] for r in records)
    device = records[0]["device"]
    assert device["name"] and device["driver_version"]
    assert all(r["device"] == device and r["preset"] == PRESET for r in records)
    assert {r["l2_policy"] for r in records} == {"warm"}
    # the replayable passes are GPU knobs: the split-reduction reset comes first in every one
    assert all(r["passes"][0].startswith("split-reduction{threads=1") for r in records)


@needs_opencl
def test_tuning_resumes_without_measuring_a_config_twice(tuned_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "tune.jsonl"
    db.write_text(tuned_db.read_text())
    target = tuning_target("opencl", PRESET)
    tune_tasks(extract_tasks(model()), str(db), 6, target=target, batch=3, progress=False)
    records = [json.loads(line) for line in db.read_text().splitlines()]
    assert len(records) == 18
    keys = [(r["workload_key"], json.dumps(r["config"], sort_keys=True)) for r in records]
    assert len(set(keys)) == len(keys)


@needs_opencl
def test_tuned_gpu_schedules_apply_and_match_onnxruntime(tuned_db: Path) -> None:
    proto = model()
    schedules = tuned_schedules(str(tuned_db), target="opencl", preset=PRESET)
    compiled = compile_model(proto, target="opencl", preset=PRESET, schedules=schedules)
    stats = compiled.notes["ziggurat.autotune"]
    assert stats.data["tuned"].data >= 1  # type: ignore[attr-defined]
    feeds = {"a": np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)}
    ours = list(compiled.run(feeds).values())[0]
    np.testing.assert_allclose(ours, onnxruntime_run(proto, feeds)[0], rtol=1e-4, atol=1e-6)


@needs_opencl
def test_gpu_records_are_never_applied_elsewhere(tuned_db: Path, tmp_path: Path) -> None:
    """Not on the CPU (another space) and not on another device of the same preset."""
    cpu = compile_model(model(), schedules=tuned_schedules(str(tuned_db)))
    assert cpu.notes["ziggurat.autotune"].data["tuned"].data == 0  # type: ignore[attr-defined]
    other = tmp_path / "other-device.jsonl"
    lines = []
    for line in tuned_db.read_text().splitlines():
        r = json.loads(line)
        r["device"]["name"] = "some other GPU"
        lines.append(json.dumps(r))
    other.write_text("\n".join(lines) + "\n")
    gpu = compile_model(
        model(),
        target="opencl",
        preset=PRESET,
        schedules=tuned_schedules(str(other), target="opencl", preset=PRESET),
    )
    assert gpu.notes["ziggurat.autotune"].data["tuned"].data == 0  # type: ignore[attr-defined]


@needs_opencl
def test_transfer_learning_trains_on_gpu_records(tuned_db: Path) -> None:
    tasks = extract_tasks(model())
    infos = {t.workload_key: anchor_info(t) for t in tasks}
    target = tuning_target("opencl", PRESET)
    base = transfer_model(
        Database(str(tuned_db)), infos, exclude=tasks[0].workload_key, target=target
    )
    assert base is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--target", "cuda"), "target 'cuda' cannot tune on this machine:"),
        (
            ("--target", "cuda", "--dask", "tcp://127.0.0.1:8786"),
            "re-checks each new best config on this machine's own cuda device, and there is none:",
        ),
        (("--preset", "cuda"), "--preset is for --target opencl or cuda"),
        (("--target", "opencl", "--threads", "2"), "--threads is a CPU option"),
        (("--target", "opencl", "--preset", "cuda"), "preset 'cuda' is for cuda, not opencl"),
    ],
)
def test_bad_gpu_tuning_requests_are_one_clear_error(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    if args[:2] == ("--target", "cuda"):
        from compiler.backends.gpu.compile import unavailable_reason

        if unavailable_reason("cuda") is None:
            pytest.skip("this machine has a CUDA GPU")
    if "opencl" in args and opencl_available() is not None:
        pytest.skip(f"OpenCL: {opencl_available()}")
    path = tmp_path / "m.onnx"
    onnx.save(model(), path)
    r = subprocess.run(
        [
            *ziggurat_cmd(),
            "tune",
            str(path),
            "--trials",
            "2",
            "--db",
            str(tmp_path / "t.jsonl"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode != 0
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "t.jsonl").exists()


@needs_opencl
def test_cli_tunes_on_opencl_showing_the_device_and_progress(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(model(), path)
    db = tmp_path / "t.jsonl"
    r = subprocess.run(
        [
            *ziggurat_cmd(),
            "tune",
            str(path),
            "--trials",
            "3",
            "--db",
            str(db),
            "--target",
            "opencl",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "trials with the xgb tuner on pthread" in r.stderr or "(opencl-" in r.stderr
    assert "GFLOP/s" in r.stderr and "best GFLOP/s" in r.stdout
    assert len(db.read_text().splitlines()) == 3
    # and `run --db` applies them on the same device and preset
    feeds = {"a": np.random.default_rng(2).standard_normal((32, 64)).astype(np.float32)}
    np.savez(tmp_path / "in.npz", **feeds)
    out = tmp_path / "out.npz"
    r = subprocess.run(
        [
            *ziggurat_cmd(),
            "run",
            str(path),
            "--target",
            "opencl",
            "--db",
            str(db),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    tuned = int(r.stderr.split(" of ")[0].split()[-1])
    assert tuned >= 1, r.stderr
    ours = np.load(out)["z"]
    np.testing.assert_allclose(ours, onnxruntime_run(model(), feeds)[0], rtol=1e-4, atol=1e-6)
