"""Helpers for the tests of compiler/package/: packages altered on purpose, and a process that
runs a package while the compiler's heavy dependencies cannot be imported.

`rewrite` copies a package with its manifest or members changed, and by default hashes the parts
again, so that a test trips exactly the check it is about and no other. `run_isolated` loads and
runs a package in a fresh Python whose import system refuses xDSL, ONNX, onnxruntime and the
compiler's passes, dialects and tuner: if the lean runtime imported any of them, even
transitively, loading would fail there.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tests.support import REPO_ROOT

HEAVY = ("xdsl", "onnx", "onnxruntime", "passes", "dialects", "autotune")
"""What the package runtime must load without."""

BLOCK_IMPORTS = """
import sys

class _Refuse:
    '''Any import of these top-level packages fails, as on a machine without them.'''

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ImportError(f"importing {{name}} is refused in this process")
        return None

sys.meta_path.insert(0, _Refuse({names!r}))
assert not [m for m in sys.modules if m.split(".")[0] in {names!r}]
"""
"""Python to run first in a process (`python -c`): `.format(names=(...))` names the refused."""

_RUN_PACKAGE = """
import numpy as np
from compiler.package import load_package

path, inputs, output, threads = sys.argv[1:5]
model = load_package(path, threads=None if threads == "-" else int(threads))
with np.load(inputs) as data:
    feeds = {k: data[k] for k in data.files}
np.savez(output, **model.run(feeds))
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
assert not loaded, loaded
"""


def isolated_python(names: tuple[str, ...] = HEAVY) -> list[str]:
    """`python -c PRELUDE` as argv, the PRELUDE refusing to import `names`; append the script."""
    return [sys.executable, "-c", BLOCK_IMPORTS.format(names=names)]


def run_python(
    code: str, *args: str, names: tuple[str, ...] = HEAVY
) -> subprocess.CompletedProcess:
    """Run `code` (after the import refusal) with `args` as sys.argv[1:]."""
    argv = isolated_python(names)
    argv[-1] += code
    return subprocess.run(
        [*argv, *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=600
    )


def run_isolated(
    package: Path, feeds: Mapping[str, np.ndarray], tmp: Path, threads: int | None = None
) -> dict[str, np.ndarray]:
    """`load_package(package).run(feeds)` in a fresh process that cannot import HEAVY."""
    inputs, output = tmp / "isolated_in.npz", tmp / "isolated_out.npz"
    np.savez(inputs, **feeds)
    proc = run_python(
        _RUN_PACKAGE % (HEAVY,),
        str(package),
        str(inputs),
        str(output),
        "-" if threads is None else str(threads),
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(output) as data:
        return {k: data[k] for k in data.files}


def members(package: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(package) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def manifest(package: Path) -> dict[str, Any]:
    return json.loads(members(package)["manifest.json"])


def write_members(path: Path, contents: Mapping[str, bytes]) -> Path:
    """A zip of exactly `contents` (names as given, even unsafe ones), mode 0644."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, blob in contents.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), blob)
    os.chmod(path, 0o644)
    return path


def rewrite(
    package: Path,
    out: Path,
    edit_manifest: Callable[[dict[str, Any]], object] | None = None,
    edit_members: Callable[[dict[str, bytes]], object] | None = None,
    rehash: bool = True,
) -> Path:
    """A copy of `package` at `out`, its members and then its manifest edited in place by the
    callbacks; with `rehash`, the manifest's `parts` then hold the new members' SHA-256."""
    contents = members(package)
    data = json.loads(contents.pop("manifest.json"))
    if edit_members:
        edit_members(contents)
    if rehash:
        data["parts"] = {n: hashlib.sha256(b).hexdigest() for n, b in contents.items()}
    if edit_manifest:
        edit_manifest(data)
    return write_members(out, {"manifest.json": json.dumps(data).encode(), **contents})
