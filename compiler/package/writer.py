"""save_package: a compiled model -> one package file (layout: compiler/package/__init__.py).

Written to a temporary file beside the target and renamed into place, so a reader never sees
half a package; mode 0644 whatever the umask (a group-writable package would be refused by the
loader). Members carry a fixed date, so the archive depends only on what it holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
import zipfile
from collections.abc import Mapping
from typing import Any, Protocol

from compiler.package.errors import PackageError
from compiler.package.format import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    sha256,
    spec_to_json,
    ziggurat_version,
)
from compiler.package.reader import read_package
from compiler.tensor_spec import TensorSpec

_DATE = (1980, 1, 1, 0, 0, 0)
ALIGN = 64
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_ALIGN_EXTRA = 6  # the padding field's id, size and alignment


class SavableModel(Protocol):
    """What a package is made from: compiler.model.CompiledModel's fields (`target`, the
    backend's name, and `artifact`, what it emitted; a model without them is a CPU one whose
    program is its artifact)."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    threads: int
    notes: dict[str, Any]
    options: dict[str, Any]


def manifest_for(
    model: SavableModel,
    backend: str,
    section: dict[str, Any],
    parts: dict[str, bytes],
    target: dict[str, Any],
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ziggurat_version": ziggurat_version(),
        "backend": backend,
        "target": target,
        "inputs": [spec_to_json(s) for s in model.inputs],
        "outputs": [spec_to_json(s) for s in model.outputs],
        "threads": model.threads,
        "compile_options": dict(model.options),
        "notes": {k: str(v) for k, v in sorted(model.notes.items())},
        backend: section,
        "parts": {name: sha256(blob) for name, blob in parts.items()},
    }


def _member(name: str, blob: bytes, zf: zipfile.ZipFile, at: int) -> None:
    """Write member `name` at offset `at`. Code and the manifest are deflated; weights (which
    barely compress) are stored, their data 64-byte aligned in the file by an extra field of
    padding (id 0xD935, as Android's zipalign writes it) and numpy's header, itself padded to
    64 bytes, so that the loader binds them in place."""
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    if name.endswith(".npy"):
        info.compress_type = zipfile.ZIP_STORED
        pad = -(at + _LOCAL_HEADER + len(name.encode()) + _ALIGN_EXTRA) % ALIGN
        info.extra = struct.pack("<HHH", 0xD935, 2 + pad, ALIGN) + bytes(pad)
    zf.writestr(info, blob)


SHARED_PREFIX = "weights/"
"""Parts a store of shared parts may hold outside the package (`save_package(shared_parts=)`)."""


def save_package(
    model: SavableModel,
    path: str | os.PathLike[str],
    shared_parts: str | os.PathLike[str] | None = None,
) -> None:
    """Write `model` as a package at `path`, through its backend's `pack`
    (compiler/backends/registry.py); PackageError if it cannot.

    `shared_parts`: a directory (the compile cache's) where the weights go instead, one file per
    distinct content (`<sha256>.npy`), so that packages with the same weights (the sizes of a
    symbolic model) store them once; the manifest lists them under `shared_parts`, and such a
    package loads only with that directory (`load_package(shared_parts=)`)."""
    from compiler.backends.registry import BACKENDS  # not at import: the registry loads us

    shown = os.fspath(path)
    target = getattr(model, "target", "cpu")
    artifact = getattr(model, "artifact", None)
    if target not in BACKENDS:
        raise PackageError(shown, f"no backend saves models compiled for {target!r}")
    backend = BACKENDS[target]
    if artifact is None:
        artifact = model.program
    section, parts = backend.pack(shown, artifact)
    manifest = manifest_for(
        model, backend.package_backend, section, parts, backend.package_target(artifact)
    )
    if shared_parts is not None:
        outside = sorted(n for n in parts if n.startswith(SHARED_PREFIX))
        for name in outside:
            store_shared_part(shown, shared_parts, manifest["parts"][name], parts[name])
        manifest["shared_parts"] = outside
        parts = {n: b for n, b in parts.items() if n not in outside}
    write_package(shown, manifest, parts)


def write_package(shown: str, manifest: dict[str, Any], parts: Mapping[str, Any]) -> None:
    """The package file: the manifest and `parts` (bytes-like), written atomically."""
    directory = os.path.dirname(os.path.abspath(shown))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".zpkg-", suffix=".tmp")
    except OSError as e:
        raise PackageError(shown, f"cannot write the package: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w") as zf:
                _member(MANIFEST, json.dumps(manifest, indent=1).encode(), zf, f.tell())
                for name, blob in parts.items():
                    _member(name, blob, zf, f.tell())
            os.fchmod(f.fileno(), 0o644)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename: a crash leaves old or new, whole
        os.replace(tmp, shown)
    except OSError as e:
        raise PackageError(shown, f"cannot write the package: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):  # gone after the rename; else half a package
            os.unlink(tmp)


def store_shared_part(
    shown: str, directory: str | os.PathLike[str], digest: str, blob: bytes
) -> None:
    """`<directory>/<digest>.npy` holding `blob` (whose SHA-256 is `digest`): kept (and marked
    as just used) if there with those bytes, else written atomically, mode 0644 (over a
    damaged copy too: every later entry would refer to it)."""
    path = os.path.join(directory, f"{digest}.npy")
    try:
        if os.path.isfile(path) and os.path.getsize(path) == len(blob):
            with open(path, "rb") as f:
                if hashlib.file_digest(f, "sha256").hexdigest() == digest:
                    os.utime(path)
                    return
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".part-", suffix=".tmp")
    except OSError as e:
        raise PackageError(shown, f"cannot store a shared part: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            os.fchmod(f.fileno(), 0o644)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise PackageError(shown, f"cannot store a shared part: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def self_contained_copy(
    path: str | os.PathLike[str], out: str | os.PathLike[str], shared_parts: str | os.PathLike[str]
) -> None:
    """Write the package at `path`, whose weights may lie in `shared_parts`, as a package at
    `out` that holds them all (checked on the way: read_package's checks)."""
    contents = read_package(path, shared_parts=shared_parts)
    manifest = {k: v for k, v in contents.manifest.items() if k != "shared_parts"}
    write_package(os.fspath(out), manifest, contents.parts)
