"""Packages shared by the tests of compiler/package/, each compiled once per session."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from compiler import zoo
from compiler.model import CompiledModel, compile_model


def _saved(tmp: pytest.TempPathFactory, name: str, threads: int = 1):
    model = zoo.builtin(name)
    compiled = compile_model(model, threads=threads)
    path = tmp.mktemp("packages") / f"{name}-{threads}.zpkg"
    compiled.save(path)
    return model, compiled, path


@pytest.fixture(scope="session")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, CompiledModel, Path]:
    """zoo:mlp compiled for one thread and saved: (the ONNX model, the compiled one, the file)."""
    return _saved(tmp_path_factory, "mlp")


@pytest.fixture(scope="session")
def mlp_package(mlp: tuple[onnx.ModelProto, CompiledModel, Path]) -> Path:
    return mlp[2]


@pytest.fixture(scope="session")
def cnn2(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, CompiledModel, Path]:
    """zoo:small-cnn compiled for two threads (its kernels call the thread pool) and saved."""
    return _saved(tmp_path_factory, "small-cnn", threads=2)
