"""Whether this host can run code compiled for a package's target.

Machine code compiled for CPU features the host lacks dies on an illegal instruction (or, worse,
mid-run); the manifest records the LLVM triple and the feature string the code was compiled
for, so loading refuses up front. The CPU name is informative only: code for znver4 runs on any
CPU with its features.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import llvmlite.binding as llvm

from compiler.package.errors import PackageError


def required_features(features: str) -> list[str]:
    """The features a feature string turns on (`+avx2,-avx512f,...` -> ['avx2'])."""
    return [f[1:] for f in features.split(",") if f.startswith("+") and len(f) > 1]


def missing_features(features: str, host: Mapping[str, bool] | None = None) -> list[str]:
    """What the code needs that `host` (default: this CPU, as llvmlite sees it) lacks."""
    have = dict(llvm.get_host_cpu_features()) if host is None else host
    return [f for f in required_features(features) if not have.get(f, False)]


def _os_and_arch(triple: str) -> tuple[str, str]:
    """(architecture, OS) of a triple: `x86_64-unknown-linux-gnu` -> ('x86_64', 'linux')."""
    parts = triple.split("-")
    return parts[0], parts[2] if len(parts) > 2 else ""


def check_host(path: str, target: Any) -> None:
    """PackageError unless this host can run code compiled for `target` (the manifest's)."""
    if not isinstance(target, dict) or not all(
        isinstance(target.get(k), str) for k in ("triple", "cpu", "features")
    ):
        raise PackageError(path, "manifest.json has no valid `target` (triple, cpu, features)")
    host_triple = llvm.get_process_triple()
    if _os_and_arch(target["triple"]) != _os_and_arch(host_triple):
        raise PackageError(
            path,
            f"was compiled for {target['triple']}; this host is {host_triple}: compile the "
            "model again on this host",
        )
    missing = missing_features(target["features"])
    if missing:
        raise PackageError(
            path,
            f"was compiled for CPU features this host lacks: "
            f"{', '.join('+' + f for f in missing)} (compiled for {target['cpu']}; this host "
            f"is {llvm.get_host_cpu_name()}): compile the model again on this host",
        )
