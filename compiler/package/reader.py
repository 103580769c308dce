"""Read a package file into memory, refusing anything that should not be run.

Every check a package must pass before any of it is used, in this order: the file (a regular
file that only you or root can change, in a directory others cannot write), the archive (an
intact zip whose member paths are plain and relative, each there once), the manifest (JSON, this
format and version) and the parts (each member listed, each listed part there, each matching its
SHA-256). The file is read once, from the descriptor that was checked; everything after works
on those bytes, so nothing can change between a check and its use.

The bytes land in one 64-byte-aligned buffer and the members stored uncompressed (the weights)
stay where they are: the writer aligns their data to 64 bytes, so the loader binds the weights
in place, with no copy (see compiler/package/llvm_cpu.py).
"""

from __future__ import annotations

import io
import json
import mmap
import os
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.package.errors import PackageError
from compiler.package.format import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    member_problem,
    sha256,
    ziggurat_version,
)
from compiler.runtime import aligned_empty

_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError)
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_HEX64 = re.compile(r"[0-9a-f]{64}")  # signature ... file name length, extra field length


@dataclass
class PackageContents:
    """A verified package: its manifest and the bytes of every other member (views into the
    file's aligned buffer where the member is stored uncompressed)."""

    path: str
    manifest: dict[str, Any]
    parts: dict[str, memoryview]


class _MemoryFile(io.RawIOBase):
    """A read-only file over a buffer, for zipfile to read the directory from without the
    copy that io.BytesIO makes."""

    def __init__(self, view: memoryview) -> None:
        self._view, self._pos = view, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._view))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b: Any) -> int:
        n = max(0, min(len(b), len(self._view) - self._pos))
        b[:n] = self._view[self._pos : self._pos + n]
        self._pos += n
        return n


def _trusted_owner(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _check_directory(path: str, directory: str) -> None:
    """Whoever can write the directory can swap the file for another between our runs (in a
    sticky one, such as /tmp, only the file's owner and the directory's can)."""
    try:
        st = os.stat(directory)
    except OSError as e:
        raise PackageError(path, f"cannot inspect its directory {directory}: {e.strerror}") from e
    sticky = bool(st.st_mode & stat.S_ISVTX)
    if not _trusted_owner(st.st_uid):
        raise PackageError(
            path,
            f"its directory {directory} is owned by uid {st.st_uid}, not by you or root, who "
            "could replace the package; loading runs its native code",
        )
    if st.st_mode & 0o022 and not sticky:
        raise PackageError(
            path,
            f"its directory {directory} is writable by group or others (mode "
            f"{stat.S_IMODE(st.st_mode):#o}), so anyone could replace the package; loading runs "
            "its native code: move it to a directory only you can write",
        )


def read_trusted_file(path: str | os.PathLike[str]) -> np.ndarray:
    """The bytes of `path` as a 64-byte-aligned uint8 array (a private mapping of the file), if
    only its owner (you or root) can change it; else PackageError."""
    shown = os.fspath(path)
    if not os.path.lexists(shown):
        raise PackageError(shown, "no such package file")
    real = os.path.realpath(shown)
    _check_directory(shown, os.path.dirname(real) or ".")
    try:  # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: `real` has no link left
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise PackageError(shown, f"cannot open it: {e.strerror}") from e
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise PackageError(shown, "is a directory, not a package file")
        if not stat.S_ISREG(st.st_mode):
            raise PackageError(shown, "is not a regular file (a device, FIFO or socket)")
        if not _trusted_owner(st.st_uid):
            raise PackageError(
                shown,
                f"is owned by uid {st.st_uid}, not by you or root, who could change it; loading "
                "runs its native code",
            )
        if st.st_mode & 0o022:
            raise PackageError(
                shown,
                f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):#o}); loading "
                f"runs its native code: `chmod go-w {shown}` if you trust it",
            )
        if st.st_size == 0:
            return aligned_empty(0, np.uint8)
        # Mapped, not read: the weights are bound where they lie (page-aligned, so 64-byte
        # aligned too), and pages are shared with the page cache instead of copied. Private
        # (copy-on-write): the code may write its globals, never into the file. Only the
        # owner checked above (you or root) can change the file while it is mapped.
        mapped = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_COPY)
        return np.frombuffer(mapped, dtype=np.uint8)
    except OSError as e:
        raise PackageError(shown, f"cannot read it: {e.strerror}") from e
    finally:
        os.close(fd)


def _manifest(path: str, zf: zipfile.ZipFile) -> dict[str, Any]:
    try:
        text = zf.read(MANIFEST)
    except KeyError:
        raise PackageError(path, f"has no {MANIFEST}: not a ziggurat package") from None
    try:
        manifest = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PackageError(path, f"{MANIFEST} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PackageError(path, f"{MANIFEST} does not describe a {FORMAT}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise PackageError(
            path,
            f"has format version {version!r}; this ziggurat ({ziggurat_version()}) reads "
            f"version {FORMAT_VERSION}: compile the model again with it",
        )
    return manifest


def _member(data: memoryview, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> memoryview:
    """A member's bytes: a view of `data` if stored, else inflated (and CRC-checked) by zipfile.
    A stored member's CRC is not computed: its SHA-256 is checked next."""
    if info.compress_type != zipfile.ZIP_STORED:
        return memoryview(zf.read(info))
    at = info.header_offset
    signature, name_len, extra_len = _LOCAL_HEADER.unpack_from(data, at)
    start = at + _LOCAL_HEADER.size + name_len + extra_len
    if signature != b"PK\x03\x04" or info.compress_size != info.file_size:
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    if start + info.file_size > len(data):
        raise zipfile.BadZipFile(f"{info.filename!r} runs past the end of the file")
    return data[start : start + info.file_size]


def _shared_names(shown: str, manifest: dict[str, Any], listed: dict[str, str]) -> set[str]:
    """The parts the manifest says lie in a store of shared parts (each listed, with a SHA-256
    that names a file there)."""
    names = manifest.get("shared_parts", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise PackageError(shown, f"{MANIFEST}: `shared_parts` is not a list of part names")
    for name in names:
        if name not in listed or not _HEX64.fullmatch(listed[name]):
            raise PackageError(shown, f"{MANIFEST}: shared part {name!r} has no SHA-256 listed")
    return set(names)


def _shared_part(
    shown: str, name: str, digest: str, directory: str | os.PathLike[str]
) -> memoryview:
    """A shared part's bytes, from `<directory>/<digest>.npy` (read_trusted_file's checks)."""
    where = os.path.join(directory, f"{digest}.npy")
    if not os.path.lexists(where):
        raise PackageError(shown, f"part {name!r} is missing from the shared parts in {directory}")
    blob = read_trusted_file(where).data.cast("B")
    if sha256(blob) != digest:
        raise PackageError(
            shown, f"shared part {name!r} ({where}) does not match its SHA-256 (corrupt or altered)"
        )
    return blob


def read_package(
    path: str | os.PathLike[str], shared_parts: str | os.PathLike[str] | None = None
) -> PackageContents:
    """The checked contents of a package file; PackageError naming the file and the problem.
    `shared_parts`: where the parts its manifest lists under `shared_parts` lie (the compile
    cache's store; compiler/package/writer.py save_package)."""
    shown = os.fspath(path)
    data = read_trusted_file(path).data.cast("B")
    try:
        zf = zipfile.ZipFile(_MemoryFile(data))
    except _ZIP_ERRORS as e:
        raise PackageError(shown, f"is not a valid package: truncated or corrupt zip ({e})") from e
    with zf:
        names = zf.namelist()
        for name in names:
            problem = member_problem(name)
            if problem:
                raise PackageError(shown, problem)
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise PackageError(shown, f"holds member {twice[0]!r} more than once")
        try:
            manifest = _manifest(shown, zf)
            listed = manifest.get("parts")
            if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
                raise PackageError(shown, f"{MANIFEST} has no `parts` table of SHA-256 hashes")
            shared = _shared_names(shown, manifest, listed)
            parts = {}
            for name in listed:
                problem = member_problem(name)
                if problem:
                    raise PackageError(shown, f"{MANIFEST}: {problem}")
                if name in names:
                    continue
                if name not in shared:
                    raise PackageError(shown, f"part {name!r} is missing")
                if shared_parts is None:
                    raise PackageError(
                        shown,
                        f"keeps part {name!r} in a compile cache's store of shared parts: not a "
                        "self-contained package (`ziggurat compile -o` writes one)",
                    )
                parts[name] = _shared_part(shown, name, listed[name], shared_parts)
            for info in zf.infolist():
                name = info.filename
                if name == MANIFEST:
                    continue
                if name not in listed:
                    raise PackageError(shown, f"holds {name!r}, which its manifest does not list")
                blob = _member(data, zf, info)
                if sha256(blob) != listed[name]:
                    raise PackageError(
                        shown,
                        f"part {name!r} does not match its SHA-256 in {MANIFEST} (corrupt or "
                        "altered)",
                    )
                parts[name] = blob
        except (*_ZIP_ERRORS, struct.error) as e:
            raise PackageError(shown, f"is not a valid package: corrupt zip ({e})") from e
    parts = {name: parts[name] for name in listed}  # the manifest's order, as it was written
    return PackageContents(shown, manifest, parts)
