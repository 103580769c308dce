"""A cache of compiled models, as packages, so that compiling the same model again is a load.

    model = cached_compile("model.onnx", threads=4)    # compile_model's arguments
    outputs = model.run({"input": x})                  # a CompiledModel, or on a hit a LoadedModel

`ziggurat run` uses it by default. Each entry is a package (compiler/package/) named by the
SHA-256 of everything the machine code depends on (`cache_key`): the model's bytes (external
data included), the input shapes, the options (optimize, layout, threads), the schedules as pass
strings plus the SHA-256 of every file a schedule option names (a tuning database: the records
it applies), the target (triple, CPU name, features), the ziggurat version, the package format
version, the versions of xDSL and LLVM, and a hash of the compiler's own source (an edited
checkout must not hit entries of the code before the edit).

The entries live in `<cache dir>/packages` (compiler/cache_dir.py: `$ZIGGURAT_CACHE_DIR`, else
`$XDG_CACHE_HOME/ziggurat`, else `~/.cache/ziggurat`), a 0700 directory that must be ours: one
that is not is not used (a warning, then an uncached compile). An entry keeps its weights in
`packages/weights`, one file per distinct content named by its SHA-256, so the sizes of a
symbolic model (one entry each) store GPT-2's 500 MB once, not once per size, and processes
loading them map the same file; `export_entry` (`ziggurat compile -o`) writes an entry as a
self-contained package. A hit goes through load_package's
checks (owner, mode, hashes, host CPU); an entry that fails them is deleted and the model
recompiled, with a warning. Entries are written to a temporary file, fsync-ed and renamed, so
processes compiling the same model at once each leave a whole entry. The least recently used
entries (a hit touches its file) are evicted beyond `$ZIGGURAT_CACHE_MAX_MB` (default 2048),
weights with them once no entry lists them.
`ZIGGURAT_NO_CACHE=1` or `cache=False` turn the cache off; the targets whose backend is not
`cached` (the GPUs': the key holds this CPU's target, not a device's) bypass it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import mmap
import os
import time
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from compiler import model as model_api
from compiler.backends.registry import BACKENDS
from compiler.cache_dir import CacheDirError, cache_dir, private_directory
from compiler.errors import ZigguratError
from compiler.frontend.onnx import load_model
from compiler.package import FORMAT_VERSION, SUFFIX, LoadedModel, PackageError, load_package
from compiler.package.format import MANIFEST, ziggurat_version
from compiler.package.llvm_cpu import target as cpu_target
from compiler.package.writer import save_package, self_contained_copy

NO_CACHE_ENV = "ZIGGURAT_NO_CACHE"
MAX_MB_ENV = "ZIGGURAT_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048.0
SUBDIR = "packages"
WEIGHTS = "weights"
_STALE_TEMP_S = 3600
"""A save_package temporary file this old was left by a process that died mid-write."""
_SOURCE_PACKAGES = ("compiler", "passes", "dialects", "autotune")
"""The top-level packages whose source decides what code a model compiles to."""


class CompileCacheError(ZigguratError):
    """A cache setting (environment variable) that makes no sense."""


def enabled(cache: bool = True) -> bool:
    """Whether to use the cache: `cache`, unless ZIGGURAT_NO_CACHE is set (to anything but 0)."""
    return cache and os.environ.get(NO_CACHE_ENV, "").strip() in ("", "0")


def max_bytes() -> int:
    """The cache's size limit in bytes, from ZIGGURAT_CACHE_MAX_MB (default 2048 MB)."""
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    if not raw:
        return int(DEFAULT_MAX_MB * 2**20)
    try:
        mb = float(raw)
        if not mb >= 0 or mb == float("inf"):
            raise ValueError
    except ValueError:
        raise CompileCacheError(
            f"{MAX_MB_ENV} must be a size in megabytes, 0 or more (got {raw!r})"
        ) from None
    return int(mb * 2**20)


def packages_dir() -> Path:
    """`<cache dir>/packages`, created private; CacheDirError if it (or the cache dir) is not."""
    private_directory(cache_dir(), "the cache directory")
    return private_directory(cache_dir() / SUBDIR, "the compile cache")


def shared_parts_dir(directory: Path) -> Path:
    """`<directory>/weights`: the entries' weights, one file per distinct content
    (`<sha256>.npy`), so the sizes of a symbolic model store theirs once; created private."""
    return private_directory(directory / WEIGHTS, "the compile cache's weights")


def export_entry(entry: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Write a cache entry as a self-contained package at `out` (its weights put back in)."""
    self_contained_copy(entry, out, shared_parts_dir(Path(entry).parent))


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _schedule_key(schedule: str | ModulePass) -> dict[str, Any]:
    """A schedule's pass string, with the SHA-256 of each file its options name (a tuning
    database), so that new records in the same file make a new key."""
    from xdsl.utils.arg_spec import parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    spec = str(schedule)  # a ModulePass prints as its `-p` string
    files: dict[str, str] = {}
    try:
        values = [v for arg in parse_pipeline(spec) for vs in arg.parameters.values() for v in vs]
    except (ArgSpecParseError, ValueError):  # not a valid spec: compiling it will say why
        values = []
    for v in values:
        if isinstance(v, str) and os.path.isfile(v):
            try:
                files[v] = _file_sha256(v)
            except OSError:
                files[v] = "unreadable"
    return {"pass": spec, "files": files}


@functools.cache
def _source_hash() -> str:
    """SHA-256 of the compiler's source files (paths and bytes), once per process."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in _SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".c") and path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _model_digest(model: str | Path | Any) -> str:
    """SHA-256 of the model: of the file's bytes when it is a file that keeps all its data
    inside (no `location` of external data in it: the common case, and a warm hit then costs
    one read instead of parsing and re-serializing hundreds of MB), else of the parsed model
    with its external data read in (weights in another file count too)."""
    if isinstance(model, (str, Path)) and Path(model).is_file() and Path(model).stat().st_size:
        with open(model, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(b"location") < 0:
                return hashlib.sha256(
                    data
                ).hexdigest()  # = the parsed model's, as onnx.save wrote it
    proto = load_model(model)
    return hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()


def cache_key(
    model: str | Path | Any,
    input_shapes: Mapping[str, list[int]] | None = None,
    optimize: bool = True,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    layout: str = "auto",
) -> str:
    """The SHA-256 naming a model's entry: see the module's docstring for what goes in."""
    import llvmlite.binding as llvm

    parts = {
        "model": _model_digest(model),
        "input_shapes": {k: list(v) for k, v in sorted((input_shapes or {}).items())},
        "optimize": bool(optimize),
        "layout": layout,
        "threads": threads,
        "schedules": [_schedule_key(s) for s in schedules],
        "target": cpu_target(),
        "ziggurat": ziggurat_version(),
        "format_version": FORMAT_VERSION,
        "toolchain": {
            "xdsl": _version("xdsl"),
            "llvmlite": _version("llvmlite"),
            "llvm": ".".join(map(str, llvm.llvm_version_info)),
        },
        "source": _source_hash(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _lookup(entry: Path, store: Path, threads: int, options: dict[str, Any]) -> LoadedModel | None:
    """The entry loaded (and marked as just used), or None: missing, or failed load_package's
    checks or was compiled with other `options` than its key says (in which case it is deleted
    with a warning)."""
    if not os.path.lexists(entry):
        return None
    try:
        loaded = load_package(entry, threads=threads, shared_parts=store)
        recorded = loaded.manifest.get("compile_options")
        if recorded != options:
            loaded.close()
            raise PackageError(str(entry), f"records compile options {recorded}, not {options}")
    except PackageError as e:
        warnings.warn(
            f"discarding a bad compile-cache entry and compiling again: {e}", stacklevel=3
        )
        with contextlib.suppress(OSError):
            os.unlink(entry)
        return None
    with contextlib.suppress(OSError):  # least recently used goes first
        os.utime(entry)
    return loaded


def _shared_digests(entry: Path) -> set[str]:
    """The SHA-256s of the shared parts an entry's manifest lists (none if it cannot be read)."""
    try:
        with zipfile.ZipFile(entry) as zf:
            manifest = json.loads(zf.read(MANIFEST))
        listed, names = manifest["parts"], manifest.get("shared_parts", [])
        return {str(listed[n]) for n in names}
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile):
        return set()


def evict(directory: Path, limit: int) -> None:
    """Delete the weights in the store of shared parts that no entry lists (unless just written
    and the cache fits: their entry may be on its way), then the least recently used entries
    until the rest, with the weights they list, fit in `limit` bytes; and the temporary files
    of writers that died long ago."""
    entries = []
    now = time.time()
    for name in os.listdir(directory):
        path = directory / name
        try:
            st = os.lstat(path)
        except OSError:  # removed by a concurrent process
            continue
        if name.endswith(SUFFIX):
            entries.append((st.st_mtime, st.st_size, path))
        elif name.endswith(".tmp") and now - st.st_mtime > _STALE_TEMP_S:
            with contextlib.suppress(OSError):
                os.unlink(path)
    store = directory / WEIGHTS
    parts: dict[str, tuple[float, int]] = {}  # digest -> (mtime, size)
    with contextlib.suppress(OSError):
        for name in os.listdir(store):
            with contextlib.suppress(OSError):
                st = os.lstat(store / name)
                if name.endswith(".npy"):
                    parts[name[: -len(".npy")]] = (st.st_mtime, st.st_size)
                elif name.endswith(".tmp") and now - st.st_mtime > _STALE_TEMP_S:
                    os.unlink(store / name)
    uses = {path: _shared_digests(path) for _, _, path in entries}
    users: dict[str, int] = {}
    for digests in uses.values():
        for d in digests:
            users[d] = users.get(d, 0) + 1
    total = sum(size for _, size, _ in entries) + sum(size for _, size in parts.values())

    def drop_part(digest: str) -> None:
        nonlocal total
        mtime, size = parts.pop(digest)
        if now - mtime > _STALE_TEMP_S or total > limit:
            with contextlib.suppress(OSError):
                os.unlink(store / f"{digest}.npy")
                total -= size

    for d in [d for d in parts if d not in users]:  # no entry lists them
        drop_part(d)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            total -= size
            for d in uses[path]:
                users[d] -= 1
                if users[d] == 0 and d in parts:
                    drop_part(d)


def cached_compile(
    model: str | Path | Any,
    input_shapes: Mapping[str, list[int]] | None = None,
    target: str = "cpu",
    optimize: bool = True,
    schedules: Sequence[str | ModulePass] = (),
    threads: int = 1,
    preset: str | None = None,
    layout: str = "auto",
    cache: bool = True,
    feeds: Mapping[str, Any] | None = None,
) -> model_api.CompiledModel | LoadedModel:
    """compile_model through the cache: the entry's LoadedModel on a hit, else the compiled
    model (saved as an entry; `feeds` are checked before the compile, as compile_model does).
    Either has `run`, `runner`, `inputs`, `outputs`, `input_names`, `output_names` and
    `threads`; `model_notes` gives either one's notes."""

    def compile_now() -> model_api.CompiledModel:
        return model_api.compile_model(
            model, input_shapes, target, optimize, schedules, threads, preset, layout, feeds=feeds
        )

    chosen = BACKENDS.get(target)
    if chosen is None or not chosen.cached or not enabled(cache):  # compile_model says why
        return compile_now()
    limit = max_bytes()
    try:
        directory = packages_dir()
        store = shared_parts_dir(directory)
    except CacheDirError as e:
        warnings.warn(f"not using the compile cache: {e}", stacklevel=2)
        return compile_now()
    if threads < 1:  # compile_model's error, before any work
        return compile_now()
    key = cache_key(model, input_shapes, optimize, schedules, threads, layout)
    entry = directory / f"{key}{SUFFIX}"
    options = {
        "threads": threads,
        "layout": layout,
        "optimize": optimize,
        "schedules": [str(s) for s in schedules],
    }
    hit = _lookup(entry, store, threads, options)
    if hit is not None:
        return hit
    compiled = compile_now()
    try:
        save_package(compiled, entry, shared_parts=store)
    except PackageError as e:
        warnings.warn(f"could not add the model to the compile cache: {e}", stacklevel=2)
    with contextlib.suppress(OSError):
        evict(directory, limit)
    return compiled


def model_notes(model: model_api.CompiledModel | LoadedModel) -> dict[str, Attribute]:
    """The `ziggurat.*` notes (memory plan, autotune statistics) of a compiled model, or those
    a package recorded (parsed back from their text; a note that does not parse is left out)."""
    if isinstance(model, model_api.CompiledModel):
        return model.notes
    from xdsl.parser import Parser

    from compiler.pass_runner import make_context

    ctx, notes = make_context(), {}
    recorded = model.manifest.get("notes")
    for name, text in (recorded if isinstance(recorded, dict) else {}).items():
        with contextlib.suppress(Exception):  # xDSL raises assorted errors for bad text
            notes[name] = Parser(ctx, str(text)).parse_attribute()
    return notes
