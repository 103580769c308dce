"""compiler/package/host_check.py: code compiled for features this host lacks is not loaded.

The manifest of a good package is edited to claim a feature (AVX512-FP16 where this CPU lacks
it, and one no CPU has) and hashed again, so the feature check is the only one that fires.
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import pytest

from compiler.package import PackageError, load_package
from compiler.package.host_check import missing_features, required_features
from tests.support.packages import manifest, rewrite


def test_required_and_missing_features() -> None:
    assert required_features("+avx2,-avx512f,+fma,+") == ["avx2", "fma"]
    host = {"avx2": True, "fma": False}
    assert missing_features("+avx2,+fma,-sse4a,+made-up", host) == ["fma", "made-up"]
    assert missing_features(llvm.get_host_cpu_features().flatten()) == []


def test_the_manifest_records_this_host(mlp_package: Path) -> None:
    target = manifest(mlp_package)["target"]
    assert target["triple"] == llvm.get_process_triple()
    assert target["cpu"] == llvm.get_host_cpu_name()
    assert target["features"] == llvm.get_host_cpu_features().flatten()


def claiming(package: Path, out: Path, feature: str) -> Path:
    def claim(m: dict) -> None:
        m["target"]["features"] += f",+{feature}"

    return rewrite(package, out, claim)


@pytest.mark.parametrize("feature", ["avx512fp16", "zig-made-up-feature"])
def test_a_feature_this_host_lacks(mlp_package: Path, tmp_path: Path, feature: str) -> None:
    if llvm.get_host_cpu_features().get(feature):
        pytest.skip(f"this CPU has {feature}")
    path = claiming(mlp_package, tmp_path / "m.zpkg", feature)
    with pytest.raises(PackageError) as e:
        load_package(path)
    cpu = llvm.get_host_cpu_name()
    assert str(e.value) == (
        f"{path}: was compiled for CPU features this host lacks: +{feature} (compiled for {cpu}; "
        f"this host is {cpu}): compile the model again on this host"
    )


def test_another_architecture(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package,
        tmp_path / "m.zpkg",
        lambda m: m["target"].update(triple="aarch64-unknown-linux-gnu"),
    )
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == (
        f"{path}: was compiled for aarch64-unknown-linux-gnu; this host is "
        f"{llvm.get_process_triple()}: compile the model again on this host"
    )


def test_no_target(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", lambda m: m.pop("target"))
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == f"{path}: manifest.json has no valid `target` (triple, cpu, features)"
