"""Whole models end to end: every zoo model through the real `ziggurat run` CLI and the Python API,
compared with onnxruntime (one thread) on the same random inputs.

ResNet-18 compiles in about 15 s, so it is compiled once per session for the API test; the CLI
test necessarily compiles it again in its own process.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler import zoo
from compiler.model import CompiledModel, compile_model
from tests.support.cli import ziggurat_cmd

REPO = Path(__file__).resolve().parents[1]
RTOL, ATOL = 1e-4, 1e-5
MODELS = {
    "mlp": zoo.mlp,
    "small-cnn": zoo.small_cnn,  # conv + batch-norm + relu, residual add, pooling, gemm
    "transformer-block": zoo.transformer_block,
    "resnet18": zoo.resnet18,
}


@dataclass
class Case:
    name: str
    proto: onnx.ModelProto
    model_path: Path
    inputs_path: Path
    feeds: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]


def onnxruntime_outputs(
    proto: onnx.ModelProto, feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


@pytest.fixture(scope="module", params=list(MODELS))
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    name = request.param
    proto = MODELS[name]()
    feeds = zoo.random_inputs(proto, seed=1)
    d = tmp_path_factory.mktemp(name)
    onnx.save(proto, d / "model.onnx")
    np.savez(d / "inputs.npz", **feeds)
    return Case(
        name, proto, d / "model.onnx", d / "inputs.npz", feeds, onnxruntime_outputs(proto, feeds)
    )


@pytest.fixture(scope="module")
def compiled(case: Case) -> CompiledModel:
    """One compilation per model (ResNet-18 takes ~15 s); pytest groups the tests by model."""
    return compile_model(case.model_path)


def assert_matches(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> None:
    assert sorted(ours) == sorted(ref)
    for k, want in ref.items():
        got = ours[k]
        assert got.dtype == np.float32, k
        assert got.shape == want.shape, k
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=k)


def test_reference_is_not_trivial(case: Case) -> None:
    """Guard the comparison itself: outputs of O(1) magnitude, not all zero or NaN."""
    for v in case.reference.values():
        assert np.isfinite(v).all()
        assert 1e-2 < float(np.max(np.abs(v))) < 1e3


def test_cli_run_matches_onnxruntime(case: Case, tmp_path: Path) -> None:
    if case.name == "resnet18":  # 20 s of CI for a path the three smaller models already take
        pytest.skip("the CLI path is the same for every model; resnet18 is checked through the API")
    out = tmp_path / "out.npz"
    r = subprocess.run(
        [
            *ziggurat_cmd(),
            "run",
            str(case.model_path),
            "--inputs",
            str(case.inputs_path),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    for name, value in case.reference.items():
        assert f"{name}: shape {list(value.shape)} -> {out}" in r.stdout
    with np.load(out) as data:
        assert_matches({k: data[k] for k in data.files}, case.reference)


def test_python_api_matches_onnxruntime(case: Case, compiled: CompiledModel) -> None:
    graph_inputs = {i.name for i in case.proto.graph.input} - {
        i.name for i in case.proto.graph.initializer
    }
    assert compiled.input_names == [
        n for n in (i.name for i in case.proto.graph.input) if n in graph_inputs
    ]
    assert compiled.output_names == [o.name for o in case.proto.graph.output]
    assert_matches(compiled.run(case.feeds), case.reference)


def test_python_api_runs_again_on_new_inputs(case: Case, compiled: CompiledModel) -> None:
    """The compiled program keeps no state between calls (buffers are reused, not leaked into results)."""
    feeds = zoo.random_inputs(case.proto, seed=2)
    assert_matches(compiled.run(feeds), onnxruntime_outputs(case.proto, feeds))
    assert_matches(compiled.run(case.feeds), case.reference)
