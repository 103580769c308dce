"""passes/schedule/cpu_target.py: CPUs as schedules see them, read from the kernel's sysfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from passes.schedule.cpu_target import (
    PRESETS,
    CacheLevel,
    _sysfs_caches,
    cpu_target,
    host_cpu,
)
from passes.schedule.target import host_vector_width


def _index(root: Path, n: int, level: int, kind: str, size: str, ways: str) -> None:
    d = root / f"index{n}"
    d.mkdir()
    for name, text in (
        ("level", f"{level}\n"),
        ("type", f"{kind}\n"),
        ("size", f"{size}\n"),
        ("ways_of_associativity", f"{ways}\n"),
        ("coherency_line_size", "64\n"),
    ):
        (d / name).write_text(text)


def test_sysfs_caches_keep_data_and_unified_levels(tmp_path: Path) -> None:
    _index(tmp_path, 0, 1, "Data", "48K", "12")
    _index(tmp_path, 1, 1, "Instruction", "32K", "8")
    _index(tmp_path, 2, 2, "Unified", "1024K", "16")
    _index(tmp_path, 3, 3, "Unified", "32M", "16")
    caches = _sysfs_caches(tmp_path)
    assert caches == {
        1: CacheLevel(48 << 10, 12),
        2: CacheLevel(1 << 20, 16),
        3: CacheLevel(32 << 20, 16),
    }
    assert caches[1].sets == 64 and caches[2].sets == 1024


def test_sysfs_without_caches_or_with_junk_gives_nothing(tmp_path: Path) -> None:
    assert _sysfs_caches(tmp_path / "missing") == {}
    _index(tmp_path, 0, 1, "Data", "lots", "8")
    assert _sysfs_caches(tmp_path) == {}


def test_the_host_is_described_from_this_machine() -> None:
    host = host_cpu()
    assert host.width == host_vector_width()
    assert host.registers == (32 if host.width >= 16 else 16)
    assert 8 << 10 <= host.l1.size <= host.l2.size
    assert cpu_target() is host and cpu_target("host") is host


def test_presets_and_unknown_names() -> None:
    assert cpu_target("znver5").l1 == CacheLevel(48 << 10, 12)
    assert cpu_target("znver4").default_accumulators == 16
    assert cpu_target("x86-64-v3").default_accumulators == 8
    with pytest.raises(ValueError, match=r"unknown CPU 'zen9' \(known: host, znver4, znver5"):
        cpu_target("zen9")


def test_a_narrower_width_keeps_the_register_file() -> None:
    zen4 = PRESETS["znver4"]
    narrow = zen4.with_width(8)
    assert (narrow.width, narrow.registers, narrow.l1) == (8, 32, zen4.l1)
    assert zen4.with_width(16) is zen4


def test_scalef_only_with_avx512() -> None:
    """Vector exp uses vscalefps (llvm.ldexp) only where it exists: on AVX2 LLVM would make a
    vector ldexp one libm call per lane."""
    assert cpu_target("znver4").has_scalef and cpu_target("znver5").has_scalef
    assert not cpu_target("x86-64-v3").has_scalef
