"""`--target opencl|cuda` and `--emit gpu|opencl|cuda` on the command line: real runs on OpenCL
(PoCL here), kernel source printed, and one clear error where a target cannot run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.backends.gpu.compile import unavailable_reason
from tests.compiler.cli.test_main import assert_user_error, call, npz, run_cli
from tests.support.references import onnxruntime_run

OPENCL = unavailable_reason("opencl")
CUDA = unavailable_reason("cuda")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cnn") / "small_cnn.onnx"
    onnx.save(zoo.small_cnn(), path)
    return path


@pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
def test_run_on_opencl_matches_onnxruntime(cnn: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    r = run_cli(
        "run",
        cnn,
        "--target",
        "opencl",
        "--inputs",
        npz(tmp_path / "in.npz", input=x),
        "--output",
        tmp_path / "out.npz",
    )
    assert r.returncode == 0, r.stderr
    (ref,) = onnxruntime_run(onnx.load(cnn), {"input": x})
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["output"], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(CUDA is None, reason="this machine has a CUDA GPU")
def test_run_on_cuda_without_a_gpu_is_one_clear_error(cnn: Path, tmp_path: Path) -> None:
    r = run_cli(
        "run",
        cnn,
        "--target",
        "cuda",
        "--inputs",
        npz(tmp_path / "in.npz", input=np.zeros((1, 3, 32, 32), np.float32)),
        "--output",
        tmp_path / "out.npz",
    )
    assert r.returncode == 1
    assert r.stderr.count("error:") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "target 'cuda' cannot run on this machine:" in r.stderr
    assert CUDA is not None and CUDA in r.stderr
    assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize(
    ("emit", "expected"),
    [
        ("cuda", ['extern "C" __global__ void kernel_0', "__shared__", "__syncthreads()"]),
        ("gpu", ['"gpu.module"() <{sym_name = "kernels"}>', '"gpu.launch_func"', "gpu.kernel"]),
    ],
)
def test_emit_prints_the_gpu_level_and_kernels(
    capsys: pytest.CaptureFixture[str],
    cnn: Path,
    emit: str,
    expected: list[str],
) -> None:
    rc, out, err = call(capsys, "compile", str(cnn), "--emit", emit)
    assert rc == 0, err
    for text in expected:
        assert text in out


@pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
def test_emit_opencl(capsys: pytest.CaptureFixture[str], cnn: Path) -> None:
    rc, out, err = call(capsys, "compile", str(cnn), "--emit", "opencl")
    assert rc == 0, err
    assert "__kernel void kernel_0" in out and "get_group_id(0)" in out


def test_target_and_emit_must_agree(capsys: pytest.CaptureFixture[str], cnn: Path) -> None:
    assert_user_error(
        call(capsys, "compile", str(cnn), "--emit", "loops", "--target", "cuda"),
        "--target cuda compiles for a GPU: --emit one of gpu, opencl, cuda",
    )
    assert_user_error(
        call(capsys, "compile", str(cnn), "--emit", "opencl", "--target", "cuda"),
        "--emit opencl does not fit --target cuda",
    )
