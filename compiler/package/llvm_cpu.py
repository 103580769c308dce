"""The "llvm-cpu" backend of packages: a loaded CPU program to parts and back.

A CPU program is the kernels' object files (compiled by the workers, kept by the program), the
optimized IR of @main (small: the weights are external globals, see
compiler/backends/llvm_cpu/translate.py) and the arrays those globals are bound to. Saving
emits @main as one more object file; loading links all of them in one MCJIT engine with the
weights bound by symbol name, exactly as compiler/backends/llvm_cpu/jit.py `load` links a
freshly compiled model: the package runs the very code that was compiled, nothing is compiled
again (only the thread pool's C library, once per host, through its verified cache).
"""

from __future__ import annotations

import io
import threading
from typing import Any

import numpy as np
from llvmlite import binding as llvm

from compiler import parallel_runtime
from compiler.backends.llvm_cpu import jit
from compiler.package.errors import PackageError
from compiler.package.format import DTYPE_KINDS
from compiler.package.host_check import check_host
from compiler.runtime import aligned_copy, is_aligned

BACKEND = "llvm-cpu"
PARALLEL_RUNTIME = "parallel-runtime"
"""What `needs` says of code that calls compiler/parallel_runtime.py's thread pool."""
NEEDS = (PARALLEL_RUNTIME,)

_bind_lock = threading.Lock()
"""Weights are bound through llvmlite's process-wide symbol table until the engine is
finalized: two packages loading at once in two threads must not bind each other's arrays."""


def target() -> dict[str, str]:
    """What the code is compiled for: this host (jit.target_machine), as the manifest says it."""
    host = jit.host_target()
    return {"triple": llvm.get_process_triple(), "cpu": host["cpu"], "features": host["features"]}


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def pack(program: jit.LLVMCPUProgram) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(the manifest's backend section, member name -> bytes) for a loaded CPU program."""
    parts: dict[str, bytes] = {}
    objects = []
    for i, obj in enumerate(program.objects):
        objects.append(f"code/kernel-{i}.o")
        parts[objects[-1]] = obj
    main = jit.emit_object(jit.parse(program.llvm_ir), jit.target_machine())
    objects.append("code/main.o")
    parts["code/main.o"] = main
    weights = {}
    for i, (symbol, array) in enumerate(sorted(program.bound_constants.items())):
        member = f"weights/{i}.npy"
        weights[symbol] = member
        parts[member] = _npy(array)
    section = {
        "objects": objects,
        "functions": {name: [list(a), r] for name, (a, r) in program.signatures.items()},
        "weights": weights,
        "needs": [PARALLEL_RUNTIME] if program.parallel else [],
        "release": program.release,
    }
    return section, parts


def _weight(path: str, member: str, blob: memoryview) -> np.ndarray:
    """The flat array of a .npy part, in place when its data is 64-byte aligned (as the writer
    stores it, and as translate.py binds weights), else an aligned copy."""
    head = io.BytesIO(bytes(blob[:65536]))
    try:
        version = np.lib.format.read_magic(head)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    except (ValueError, OSError, EOFError) as e:
        raise PackageError(path, f"part {member!r} is not a .npy array ({e})") from None
    count = int(np.prod(shape, dtype=np.int64))
    start = head.tell()
    if (
        dtype.kind not in DTYPE_KINDS
        or not dtype.isnative
        or (fortran and len(shape) > 1)
        or start + count * dtype.itemsize != len(blob)
    ):
        raise PackageError(path, f"part {member!r} is not a flat native numeric array")
    array = np.frombuffer(blob, dtype=np.uint8)[start:].view(dtype)
    return array if is_aligned(array, 64) else aligned_copy(array, align=64)


def _functions(path: str, table: Any) -> dict[str, jit.FunctionType]:
    if not isinstance(table, dict):
        raise PackageError(path, f"manifest.json: `{BACKEND}.functions` is not a table")
    out: dict[str, jit.FunctionType] = {}
    for name, entry in table.items():
        ok = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
        args, ret = (entry[0], entry[1]) if ok else ([], None)
        if (
            not ok
            or any(a not in jit.CTYPES for a in args)
            or not (ret is None or ret in jit.CTYPES)
        ):
            raise PackageError(path, f"manifest.json: function {name!r} has a bad type {entry!r}")
        out[name] = (tuple(args), ret)
    return out


def unpack(
    path: str, manifest: dict[str, Any], parts: dict[str, memoryview], threads: int
) -> jit.LLVMCPUProgram:
    """The package's code loaded and linked, its weights bound, on this host (checked first)."""
    check_host(path, manifest.get("target"))
    section = manifest.get(BACKEND)
    if not isinstance(section, dict):
        raise PackageError(path, f"manifest.json has no `{BACKEND}` section")
    try:
        objects = [bytes(parts[m]) for m in section["objects"]]
        weights = {s: _weight(path, m, parts[m]) for s, m in section["weights"].items()}
        needs = list(section["needs"])
    except (KeyError, TypeError, AttributeError) as e:
        raise PackageError(path, f"manifest.json: bad `{BACKEND}` section ({e!r})") from None
    unknown = [n for n in needs if n not in NEEDS]
    if unknown:
        raise PackageError(path, f"needs {unknown}, which this ziggurat does not provide")
    signatures = _functions(path, section.get("functions"))
    release = section.get("release")  # absent in packages of before it
    if release is not None and release not in signatures:
        raise PackageError(path, f"manifest.json: `release` names no function: {release!r}")
    if PARALLEL_RUNTIME in needs:
        parallel_runtime.load()  # the thread pool's library, from its verified cache
    with _bind_lock:
        try:
            program = jit.load(
                None, objects, signatures=signatures, symbols=weights, release=release
            )
        except RuntimeError as e:  # llvmlite: an object file that is not for this machine
            raise PackageError(path, f"its machine code cannot be loaded: {e}") from None
    if program.parallel:
        parallel_runtime.set_num_threads(threads)
    return program
