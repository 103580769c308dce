"""The user's cache directory, and private directories in it, for whatever ziggurat keeps there.

Both the thread-pool library (compiler/parallel_runtime.py) and the compile cache
(compiler/compile_cache.py) keep native code that later processes run, so both need the same
guarantee: a directory owned by the current user that nobody else can write. This is that rule,
in one place.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
from pathlib import Path

from compiler.errors import ZigguratError

_HINT = "or set ZIGGURAT_CACHE_DIR to a directory only you can write"


class CacheDirError(ZigguratError):
    """A cache directory could not be created, or is not private enough to trust."""


def cache_dir() -> Path:
    """`$ZIGGURAT_CACHE_DIR`, else `$XDG_CACHE_HOME/ziggurat`, else `~/.cache/ziggurat`."""
    if os.environ.get("ZIGGURAT_CACHE_DIR"):
        return Path(os.environ["ZIGGURAT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "ziggurat"
    return Path.home() / ".cache" / "ziggurat"


def private_directory(directory: Path, what: str) -> Path:
    """`directory`, created 0700 (with any parents it needs) and checked to be writable by the
    current user only; `what` names it in errors ("the thread-pool runtime cache"). Returns the
    resolved path (no symlink left to swap). An existing directory is never chmod-ed: if it is
    shared or not ours, CacheDirError says how to fix it, rather than trust what it may hold."""
    missing: list[Path] = []
    for p in (directory, *directory.parents):
        if os.path.lexists(p):
            break
        missing.append(p)
    try:
        for p in reversed(missing):  # top-down; mkdir's mode is masked by the umask, chmod not
            with contextlib.suppress(FileExistsError):  # a concurrent process made it
                os.mkdir(p, 0o700)
                os.chmod(p, 0o700)
        resolved = Path(os.path.realpath(directory))
        st = os.stat(resolved)
    except OSError as e:
        raise CacheDirError(
            f"cannot create {what} {directory}: {e.strerror}; "
            f"set ZIGGURAT_CACHE_DIR to a writable directory"
        ) from e
    if not stat.S_ISDIR(st.st_mode):
        raise CacheDirError(f"{what} {resolved} is not a directory; remove it {_HINT}")
    if st.st_uid != os.geteuid():
        raise CacheDirError(
            f"{what} {resolved} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}), "
            f"so what it holds cannot be trusted; remove it {_HINT}"
        )
    if st.st_mode & 0o022:
        raise CacheDirError(
            f"{what} {resolved} is writable by group or others (mode "
            f"{stat.S_IMODE(st.st_mode):#o}), so anyone could plant code there; run "
            f"`chmod 700 {shlex.quote(str(resolved))}` {_HINT}"
        )
    return resolved
