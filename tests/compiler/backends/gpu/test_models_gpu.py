"""Whole models on the GPU back ends: every whole model and zoo model runs on OpenCL (PoCL here)
and matches onnxruntime within 1e-4 of its output's scale; its CUDA C compiles for sm_90 (nvcc)
and its gpu level passes mlir-opt-22; on a machine with a CUDA GPU the same models run with
`target="cuda"` (skipped elsewhere, with the reason).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.backends.gpu.compile import kernel_source, unavailable_reason
from compiler.backends.gpu.cuda_check import check_cuda_source, nvcc_path
from compiler.model import compile_model, import_model, lower_to_gpu
from compiler.xdsl_workarounds import apply as apply_xdsl_workarounds
from tests.support import model_zoo
from tests.support.references import onnxruntime_run
from tests.test_model_zoo import FULL_ZOO, IMPORT_ONLY

WHOLE = {
    "mlp": zoo.mlp,
    "small-cnn": zoo.small_cnn,
    "transformer-block": zoo.transformer_block,
    "resnet18": zoo.resnet18,
}
MLIR_OPT = shutil.which("mlir-opt-22") or "/usr/bin/mlir-opt-22"
OPENCL = unavailable_reason("opencl")
CUDA = unavailable_reason("cuda")


def _model(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict | None]:
    if name in WHOLE:
        proto = WHOLE[name]()
        return proto, zoo.random_inputs(proto, seed=1), None
    proto, feeds = model_zoo.load(name)
    return proto, feeds, model_zoo.input_shapes(name)


def _names() -> list:
    out: list = list(WHOLE)
    for name in model_zoo.names():
        if name in IMPORT_ONLY and not FULL_ZOO:
            reason = f"import only in CI ({IMPORT_ONLY[name]}); set ZIGGURAT_FULL_ZOO=1"
            out.append(pytest.param(name, marks=[pytest.mark.skip(reason=reason)]))
        else:
            out.append(name)
    return out


def assert_close(ours: dict[str, np.ndarray], refs: list[np.ndarray]) -> None:
    assert len(ours) == len(refs)
    for o, r in zip(ours.values(), refs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        scale = max(float(np.max(np.abs(r))), 1e-3)
        err = float(np.max(np.abs(o - r)))
        assert err <= 1e-4 * scale, (err, scale)


@pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
@pytest.mark.parametrize("name", _names())
def test_model_runs_on_opencl(name: str) -> None:
    proto, feeds, shapes = _model(name)
    compiled = compile_model(proto, shapes, target="opencl")
    assert_close(compiled.run(feeds), onnxruntime_run(proto, feeds))


@pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
@pytest.mark.parametrize("name", list(WHOLE))
def test_whole_model_with_simt_schedules_runs_on_opencl(name: str) -> None:
    """The schedules a GPU gets (staged operands, barriers, many threads per block), run on
    this machine's OpenCL device: what the CUDA kernels compute, checked for real."""
    proto, feeds, shapes = _model(name)
    compiled = compile_model(proto, shapes, target="opencl", preset="opencl-gpu")
    assert_close(compiled.run(feeds), onnxruntime_run(proto, feeds))


@pytest.mark.parametrize("name", _names())
def test_model_cuda_source_compiles_and_gpu_level_is_mlir(name: str, tmp_path: Path) -> None:
    if nvcc_path() is None and not Path(MLIR_OPT).is_file():
        pytest.skip("neither nvcc nor mlir-opt-22 is installed")
    proto, _, shapes = _model(name)
    module = import_model(proto, shapes)
    lower_to_gpu(module, "cuda")
    if nvcc_path() is not None:
        check_cuda_source(kernel_source(module, "cuda"), "sm_90")
    if Path(MLIR_OPT).is_file():
        apply_xdsl_workarounds()  # as the CLI prints it
        path = tmp_path / "gpu.mlir"
        path.write_text(str(module))
        r = subprocess.run([MLIR_OPT, str(path), "-o", "/dev/null"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]


@pytest.mark.skipif(CUDA is not None, reason=f"CUDA: {CUDA}")
@pytest.mark.parametrize("name", _names())
def test_model_runs_on_cuda(name: str) -> None:
    proto, feeds, shapes = _model(name)
    compiled = compile_model(proto, shapes, target="cuda")
    assert_close(compiled.run(feeds), onnxruntime_run(proto, feeds))
