"""BACKENDS: every target by name, the one list the model API, the compile cache and the
package loader read ("cpu", then the GPU APIs).

Importing it imports no xDSL, ONNX or passes (see compiler/backends/base.py), so the lean
package runtime looks its loaders up here too.
"""

from __future__ import annotations

from typing import Any

from compiler.backends.base import Backend
from compiler.backends.cpu import CpuBackend
from compiler.backends.gpu.backend import CudaBackend, OpenCLBackend
from compiler.errors import CompileError

BACKENDS: dict[str, Backend[Any]] = {
    b.name: b for b in (CpuBackend(), OpenCLBackend(), CudaBackend())
}
"""Target name -> its backend."""

PACKAGE_BACKENDS: dict[str, Backend[Any]] = {b.package_backend: b for b in BACKENDS.values()}
"""A manifest's `backend` -> the backend that loads it ("llvm-cpu", "opencl", "cuda")."""


def backend(target: str) -> Backend[Any]:
    """The backend of `target`; CompileError naming the targets for an unknown one."""
    if target not in BACKENDS:
        raise CompileError(f"unknown target '{target}' (available: {', '.join(BACKENDS)})")
    return BACKENDS[target]
