"""MLIR compatibility: what `ziggurat compile --emit tensor|loops|llvm-dialect` prints for every
whole model is accepted (parsed and verified) by the real `mlir-opt-22`, and uses only the upstream
dialects of its level.

ResNet-18 runs at its full 224x224 size: its tensor level carries ~94 MB of weight hex, which
mlir-opt parses in well under a second, so no smaller stand-in is needed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import onnx
import pytest

from compiler import zoo
from tests.support.cli import ziggurat_cmd

REPO = Path(__file__).resolve().parents[1]
MLIR_OPT = Path("/usr/bin/mlir-opt-22")
pytestmark = pytest.mark.skipif(
    not MLIR_OPT.is_file(),
    reason="/usr/bin/mlir-opt-22 not installed (apt-get install mlir-22-tools; CI has it)",
)

MODELS = {
    "mlp": zoo.mlp,
    "small-cnn": zoo.small_cnn,
    "transformer-block": zoo.transformer_block,
    "resnet18": zoo.resnet18,
}
# The dialects each level may use (of the ops mlir-opt prints in generic form).
ALLOWED = {
    "tensor": {"builtin", "func", "linalg", "tensor", "arith", "math"},
    "loops": {"builtin", "func", "scf", "memref", "arith", "math", "vector"},
    "llvm-dialect": {"builtin", "llvm"},
}
REQUIRED = {"tensor": "linalg", "loops": "scf", "llvm-dialect": "llvm"}
OP_NAME = re.compile(r'^\s*(?:%[^=]*= )?"([a-z_]+)\.[a-z_.]+"\(', re.M)


@pytest.fixture(scope="module", params=list(MODELS))
def model_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(request.param) / "model.onnx"
    onnx.save(MODELS[request.param](), path)
    return path


@pytest.mark.parametrize("level", list(ALLOWED))
def test_mlir_opt_accepts_level(model_path: Path, level: str, tmp_path: Path) -> None:
    mlir = tmp_path / f"{level}.mlir"
    r = subprocess.run(
        [*ziggurat_cmd(), "compile", str(model_path), "--emit", level, "-o", str(mlir)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    try:
        # Parse + verify, and print back in generic form so op names can be read without guessing
        # at custom syntax. Elided constants keep the ResNet-18 printout small.
        r = subprocess.run(
            [
                str(MLIR_OPT),
                str(mlir),
                "--mlir-print-op-generic",
                "--mlir-elide-elementsattrs-if-larger=16",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        mlir.unlink()
    assert r.returncode == 0, f"mlir-opt-22 rejected the {level} level:\n{r.stderr[:4000]}"
    dialects = set(OP_NAME.findall(r.stdout))
    assert REQUIRED[level] in dialects
    assert dialects <= ALLOWED[level], (
        f"unexpected dialects at {level}: {sorted(dialects - ALLOWED[level])}"
    )


@pytest.mark.parametrize("level", ["loops", "llvm-dialect"])
def test_mlir_opt_accepts_parallel_loops(level: str, tmp_path: Path) -> None:
    """With --threads 2 the loops level holds scf.parallel and the llvm level calls the runtime."""
    path = tmp_path / "model.onnx"
    onnx.save(zoo.small_cnn(), path)
    mlir = tmp_path / f"{level}.mlir"
    r = subprocess.run(
        [*ziggurat_cmd(), "compile", str(path), "--emit", level, "--threads", "2", "-o", str(mlir)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    text = mlir.read_text()
    assert (
        ('"scf.parallel"' in text) if level == "loops" else ("llvm.call @zrt_parallel_for" in text)
    )
    r = subprocess.run(
        [str(MLIR_OPT), str(mlir), "--mlir-print-op-generic"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"mlir-opt-22 rejected the {level} level:\n{r.stderr[:4000]}"
    dialects = set(OP_NAME.findall(r.stdout))
    assert dialects <= ALLOWED[level], (
        f"unexpected dialects at {level}: {sorted(dialects - ALLOWED[level])}"
    )
