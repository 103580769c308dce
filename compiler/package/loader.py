"""load_package: a package file -> a LoadedModel, through the loader its `backend` names.

The lean runtime's entry point: it imports numpy, llvmlite, ctypes and the standard library
(through the modules of this package, compiler/tensor_spec.py, compiler/runtime.py and
compiler/backends/llvm_cpu/jit.py), never xDSL, ONNX or the passes, so a deployed model loads
in a fraction of the compiler's import time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from compiler.errors import InputError
from compiler.package import llvm_cpu
from compiler.package.errors import PackageError
from compiler.package.format import spec_from_json
from compiler.package.loaded_model import LoadedModel
from compiler.package.reader import read_package
from compiler.tensor_spec import TensorSpec

Loader = Callable[[str, dict[str, Any], dict[str, memoryview], int], Any]
LOADERS: dict[str, Loader] = {llvm_cpu.BACKEND: llvm_cpu.unpack}
"""backend name (the manifest's `backend`) -> (path, manifest, parts, threads) -> program."""


def _specs(path: str, manifest: dict[str, Any], key: str) -> list[TensorSpec]:
    entries = manifest.get(key)
    if not isinstance(entries, list):
        raise PackageError(path, f"manifest.json has no `{key}` list")
    try:
        return [spec_from_json(e) for e in entries]
    except (ValueError, TypeError, KeyError) as e:
        raise PackageError(path, f"manifest.json: bad `{key}` entry ({e})") from None


def _check_entry(path: str, program: Any, inputs: list, outputs: list) -> None:
    """@main takes one pointer per input and output: a manifest that says otherwise would have
    the code read or write memory that is not there."""
    signature = getattr(program, "signatures", {}).get("main")
    expected = (("ptr",) * (len(inputs) + len(outputs)), None)
    if signature != expected:
        raise PackageError(
            path,
            f"its main function has type {signature!r}, not one pointer per input and output",
        )


def load_package(path: str | os.PathLike[str], threads: int | None = None) -> LoadedModel:
    """Load a package saved by `CompiledModel.save` (or `ziggurat compile -o X.zpkg`) for this
    host. `threads`: the parallel loops' thread count (default: the one it was saved with).

    PackageError, naming the file and the problem, for a package that is not safe or not fit to
    run here (see compiler/package/__init__.py)."""
    if threads is not None and threads < 1:
        raise InputError(f"threads must be at least 1 (got {threads})")
    contents = read_package(path)
    shown, manifest = contents.path, contents.manifest
    backend = manifest.get("backend")
    if backend not in LOADERS:
        raise PackageError(
            shown, f"is for backend {backend!r}; this ziggurat loads {', '.join(LOADERS)}"
        )
    inputs, outputs = _specs(shown, manifest, "inputs"), _specs(shown, manifest, "outputs")
    saved = manifest.get("threads", 1)
    if threads is None:
        threads = saved if isinstance(saved, int) and saved >= 1 else 1
    program = LOADERS[backend](shown, manifest, contents.parts, threads)
    _check_entry(shown, program, inputs, outputs)
    return LoadedModel(shown, inputs, outputs, program, threads, manifest)
