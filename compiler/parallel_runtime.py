"""Build and load ziggurat's thread-pool runtime (parallel_runtime.c) for parallel loops.

Generated code runs a parallel loop by calling `zrt_parallel_for(body, ctx, n)`, a persistent
pthread pool in C: the kernel stays native code from start to end. Starting Python threads for
each call would cost far more than the kernels themselves (10-1000 us) and would serialize on the
GIL. The C source is compiled once with the host C compiler (`$CC`, else `cc`) into a private
cache directory (0700, ours; each library checked against the SHA-256 recorded when it was built:
see `library_path`) and loaded with `llvmlite.binding.load_library_permanently`, so that JIT-ed
modules which declare `zrt_parallel_for` resolve it; the ctypes handle sets the number of threads.

Imports no xDSL: the autotuner's runner process may load it too.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from compiler.cache_dir import CacheDirError, cache_dir, private_directory
from compiler.errors import ZigguratError

SOURCE = Path(__file__).with_name("parallel_runtime.c")
CFLAGS = ("-O2", "-shared", "-fPIC", "-pthread", "-std=c11")
SYMBOLS = ("zrt_parallel_for", "zrt_set_num_threads", "zrt_get_num_threads")
_COMPILE_TIMEOUT_S = 120
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

BODY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
"""The type of a loop body, `void body(int64_t begin, int64_t end, void *ctx)`."""

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


class ParallelRuntimeError(ZigguratError, RuntimeError):
    """The thread-pool runtime could not be built or loaded."""


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


def private_cache_dir() -> Path:
    """`cache_dir()`, created 0700 and checked to be writable by the current user only
    (compiler/cache_dir.py): the library loaded from it runs in every ziggurat process, so a
    directory others can write would let them plant code."""
    try:
        return private_directory(cache_dir(), "the thread-pool runtime cache")
    except CacheDirError as e:
        raise ParallelRuntimeError(str(e)) from e


def _trusted(path: Path, sha256: str) -> bool:
    """Whether `path` is a regular file (not a symlink, FIFO, ...) owned by us, not writable by
    group or others, whose bytes hash to `sha256` (recorded in its name when we built it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not block
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return False
        digest = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest() == sha256
    except OSError:
        return False
    finally:
        os.close(fd)


def library_path() -> str:
    """The shared library built from parallel_runtime.c for this source, compiler and flags:
    a verified cached copy, else compiled now.

    The cache holds `libzrt_parallel-<key>-<sha256 of the file>.so`. A copy is used only if it
    is a regular file owned by us, not group/other-writable, whose bytes hash to the SHA-256 in
    its name; anything else under our prefix (planted, truncated, half-written) is deleted and
    the library rebuilt: compiled to a temp file, hashed, then renamed into place (atomic).
    The check is meaningful (no time-of-check/time-of-use gap) because the directory is ours
    and writable by us only (`private_cache_dir`): between hashing the file and `load()`
    dlopen-ing the same path nobody else can replace it. An ancestor directory that others can
    write (e.g. ZIGGURAT_CACHE_DIR under a non-sticky shared directory) would void that; the
    defaults, under your home, do not have one."""
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
    directory = private_cache_dir()
    prefix = f"libzrt_parallel-{key.hexdigest()[:16]}-"
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise ParallelRuntimeError(
            f"cannot read the thread-pool runtime cache {directory}: {e.strerror}; "
            f"set ZIGGURAT_CACHE_DIR to a writable directory"
        ) from e
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".so")):
            continue
        sha = name[len(prefix) : -len(".so")]
        if _SHA256_RE.fullmatch(sha) and _trusted(directory / name, sha):
            return str(directory / name)
        with contextlib.suppress(OSError):  # untrusted: never load it, rebuild instead
            os.unlink(directory / name)
    return str(_build(argv, directory, prefix))


def _build(argv: list[str], directory: Path, prefix: str) -> Path:
    """Compile into a temp file in `directory`, then rename it to `<prefix><sha256>.so`."""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
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
        try:
            os.chmod(tmp, 0o700)  # the linker may have recreated it with the umask's mode
            with open(tmp, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            path = directory / f"{prefix}{sha}.so"
            os.replace(tmp, path)  # atomic; a concurrent identical build is fine to replace
        except OSError as e:
            raise ParallelRuntimeError(
                f"cannot write the thread-pool runtime to {directory}: {e.strerror}; "
                f"set ZIGGURAT_CACHE_DIR to a writable directory"
            ) from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if not _trusted(path, sha):
        raise ParallelRuntimeError(
            f"the thread-pool runtime just built at {path} changed before it could be loaded; "
            f"set ZIGGURAT_CACHE_DIR to a directory only you can write"
        )
    return path


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
