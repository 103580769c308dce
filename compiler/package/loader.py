"""load_package: a package file -> a LoadedModel, through the backend its `backend` names
(compiler/backends/registry.py PACKAGE_BACKENDS: "llvm-cpu", "opencl", "cuda").

The lean runtime's entry point: it imports numpy, llvmlite, ctypes and the standard library
(through the modules of this package, compiler/tensor_spec.py, compiler/runtime.py,
compiler/backends/llvm_cpu/jit.py and the backends' xDSL-free halves: base.py, registry.py,
gpu/plan.py and the GPU runtimes, whose pyopencl or pycuda is imported when a GPU package
loads), never xDSL, ONNX or the passes, so a deployed model loads in a fraction of the
compiler's import time.
"""

from __future__ import annotations

import os
from typing import Any

from compiler.errors import InputError
from compiler.package.errors import PackageError
from compiler.package.format import spec_from_json
from compiler.package.loaded_model import LoadedModel
from compiler.package.reader import read_package
from compiler.tensor_spec import TensorSpec


def _specs(path: str, manifest: dict[str, Any], key: str) -> list[TensorSpec]:
    entries = manifest.get(key)
    if not isinstance(entries, list):
        raise PackageError(path, f"manifest.json has no `{key}` list")
    try:
        return [spec_from_json(e) for e in entries]
    except (ValueError, TypeError, KeyError) as e:
        raise PackageError(path, f"manifest.json: bad `{key}` entry ({e})") from None


def _check_entry(path: str, program: Any, inputs: list, outputs: list) -> None:
    """@main takes one pointer per input and output, then one i64 per run-time dim of each
    (inputs then outputs): a manifest that says otherwise would have the code read or write
    memory that is not there. A GPU program's plan takes the inputs and
    outputs as the manifest lists them (shapes and buffer types)."""
    plan = getattr(program, "plan", None)
    if plan is not None:
        want = [(tuple(s.shape), s.buffer_dtype) for s in [*inputs, *outputs]]
        have = [(b.shape, b.dtype) for b in [*plan.inputs, *plan.outputs]]
        if want != have:
            raise PackageError(
                path,
                f"its launch plan takes {have}, not the inputs and outputs its manifest lists",
            )
        return
    signature = getattr(program, "signatures", {}).get("main")
    sizes = sum(len(s.run_time_dims) for s in [*inputs, *outputs])
    expected = (("ptr",) * (len(inputs) + len(outputs)) + ("i64",) * sizes, None)
    if signature != expected:
        raise PackageError(
            path,
            f"its main function has type {signature!r}, not one pointer per input and output"
            + (f" and one i64 per run-time dim ({sizes})" if sizes else ""),
        )


def load_package(
    path: str | os.PathLike[str],
    threads: int | None = None,
    target: str | None = None,
    shared_parts: str | os.PathLike[str] | None = None,
) -> LoadedModel:
    """Load a package saved by `CompiledModel.save` (or `ziggurat compile -o X.zpkg`) for this
    host. `threads`: the parallel loops' thread count (default: the one it was saved with).
    `target`: refuse a package compiled for another one ("cpu", "opencl", "cuda").

    PackageError, naming the file and the problem, for a package that is not safe or not fit to
    run here (see compiler/package/__init__.py). `shared_parts`: the store a compile cache's
    entry keeps its weights in (read_package)."""
    from compiler.backends.registry import PACKAGE_BACKENDS  # not at import: it loads us

    if threads is not None and threads < 1:
        raise InputError(f"threads must be at least 1 (got {threads})")
    contents = read_package(path, shared_parts)
    shown, manifest = contents.path, contents.manifest
    name = manifest.get("backend")
    if name not in PACKAGE_BACKENDS:
        raise PackageError(
            shown, f"is for backend {name!r}; this ziggurat loads {', '.join(PACKAGE_BACKENDS)}"
        )
    backend = PACKAGE_BACKENDS[name]
    if target is not None and target != backend.name:
        raise PackageError(shown, f"is a package for {backend.name}, not for {target}")
    inputs, outputs = _specs(shown, manifest, "inputs"), _specs(shown, manifest, "outputs")
    saved = manifest.get("threads", 1)
    if threads is None:
        threads = saved if isinstance(saved, int) and saved >= 1 else 1
    program = backend.unpack(shown, manifest, contents.parts, threads)
    _check_entry(shown, program, inputs, outputs)
    return LoadedModel(shown, inputs, outputs, program, threads, manifest)
