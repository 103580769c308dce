"""Build and load ziggurat's thread-pool runtime (parallel_runtime.c) for parallel loops.

Generated code runs a parallel loop by calling `zrt_parallel_for(body, ctx, n)`, a persistent
pthread pool in C: the kernel stays native code from start to end. Starting Python threads for
each call would cost far more than the kernels themselves (10-1000 us) and would serialize on the
GIL. The C source is compiled once with the host C compiler (`$CC`, else `cc`) into a cache
directory and loaded with `llvmlite.binding.load_library_permanently`, so that JIT-ed modules
which declare `zrt_parallel_for` resolve it; the ctypes handle sets the number of threads.

Imports no xDSL: the autotuner's runner process may load it too.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from compiler.errors import ZigguratError

SOURCE = Path(__file__).with_name("parallel_runtime.c")
CFLAGS = ("-O2", "-shared", "-fPIC", "-pthread", "-std=c11")
SYMBOLS = ("zrt_parallel_for", "zrt_set_num_threads", "zrt_get_num_threads")
_COMPILE_TIMEOUT_S = 120

BODY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
"""The type of a loop body, `void body(int64_t begin, int64_t end, void *ctx)`."""

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


class ParallelRuntimeError(ZigguratError, RuntimeError):
    """The thread-pool runtime could not be built or loaded."""


def cache_dir() -> Path:
    """`$ZIGGURAT_CACHE_DIR`, else `$XDG_CACHE_HOME/ziggurat`, else `~/.cache/ziggurat`."""
    if os.environ.get("ZIGGURAT_CACHE_DIR"):
        return Path(os.environ["ZIGGURAT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "ziggurat"
    return Path.home() / ".cache" / "ziggurat"


def _compiler() -> list[str]:
    """The compiler command: `$CC` (may hold arguments, e.g. `ccache gcc`), else `cc`."""
    cc = os.environ.get("CC", "").strip()
    argv = shlex.split(cc) if cc else ["cc"]
    if shutil.which(argv[0]) is None:
        origin = "$CC" if cc else "the default C compiler"
        raise ParallelRuntimeError(
            f"parallel loops need a C compiler to build ziggurat's thread-pool runtime, and "
            f"{argv[0]!r} ({origin}) was not found: install gcc (apt install gcc) or set CC "
            f"to a C compiler"
        )
    return argv


def library_path() -> str:
    """The shared library built from parallel_runtime.c: reused if the cache holds one for this
    source, compiler and flags, else compiled now (atomically: a temp file, then os.replace)."""
    source = SOURCE.read_bytes()
    argv = _compiler()
    key = hashlib.sha256()
    for part in (
        source,
        " ".join(argv).encode(),
        " ".join(CFLAGS).encode(),
        sys.platform.encode(),
        platform.machine().encode(),
    ):
        key.update(part + b"\0")
    directory = cache_dir()
    path = directory / f"libzrt_parallel-{key.hexdigest()[:16]}.so"
    if path.is_file():
        return str(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=path.stem + ".", suffix=".tmp")
        os.close(fd)
    except OSError as e:
        raise ParallelRuntimeError(
            f"cannot write the thread-pool runtime to {directory}: {e.strerror}; "
            f"set ZIGGURAT_CACHE_DIR to a writable directory"
        ) from e
    try:
        try:
            proc = subprocess.run(
                [*argv, *CFLAGS, "-o", tmp, str(SOURCE)],
                capture_output=True,
                text=True,
                timeout=_COMPILE_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ParallelRuntimeError(
                f"building ziggurat's thread-pool runtime with {argv[0]!r} failed ({e}): "
                f"install gcc (apt install gcc) or set CC to a working C compiler"
            ) from e
        if proc.returncode != 0:
            stderr = " | ".join(line for line in proc.stderr.strip().splitlines() if line.strip())
            raise ParallelRuntimeError(
                f"building ziggurat's thread-pool runtime with {argv[0]!r} failed "
                f"(exit code {proc.returncode}): {stderr[:2000] or 'no output'}; "
                f"install gcc (apt install gcc) or set CC to a working C compiler"
            )
        os.chmod(tmp, 0o755)  # mkstemp's 0600 would keep a shared cache from other users
        os.replace(tmp, path)  # atomic: a concurrent builder's identical file is fine to replace
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


def load() -> ctypes.CDLL:
    """Build if needed, make the symbols visible to JIT-ed code, return the ctypes handle (once
    per process; later calls return the same handle)."""
    global _lib
    with _lock:
        if _lib is None:
            import llvmlite.binding as llvm

            path = library_path()
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            llvm.load_library_permanently(path)  # the same dlopen handle: one pool per process
            lib.zrt_parallel_for.argtypes = [BODY, ctypes.c_void_p, ctypes.c_int64]
            lib.zrt_parallel_for.restype = None
            lib.zrt_set_num_threads.argtypes = [ctypes.c_int]
            lib.zrt_set_num_threads.restype = None
            lib.zrt_get_num_threads.argtypes = []
            lib.zrt_get_num_threads.restype = ctypes.c_int
            _lib = lib
        return _lib


def set_num_threads(n: int) -> None:
    """Threads for the next parallel loops (the caller included); n < 1 means 1."""
    load().zrt_set_num_threads(int(n))


def get_num_threads() -> int:
    """Threads parallel loops use; initially `$ZIGGURAT_NUM_THREADS`, else 1."""
    return int(load().zrt_get_num_threads())
