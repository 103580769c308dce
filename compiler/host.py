"""The host CPU, described for people: every benchmark figure names the machine it came from.

Machines here differ (Zen 4: 512-bit ops double-pumped; Zen 5: full-width AVX-512, twice the
FLOP/s), so a figure without its CPU cannot be compared with anything.
"""

from __future__ import annotations

import os
from pathlib import Path

ZEN = {23: "Zen 2", 25: "Zen 3/4", 26: "Zen 5"}  # AMD family -> microarchitecture
LLVM_ARCH = {"znver3": "Zen 3", "znver4": "Zen 4", "znver5": "Zen 5"}


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if not sep:
                break  # the first processor's block only
            info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return info


def cpu_description() -> str:
    """E.g. 'AMD EPYC 9R14 (Zen 4, family 25, LLVM znver4, avx512f), 2 cores'."""
    import llvmlite.binding as llvm

    info = _cpuinfo()
    name = info.get("model name", "unknown CPU")
    llvm_cpu = llvm.get_host_cpu_name()
    family_text = info.get("cpu family", "")
    family = int(family_text) if family_text.isdigit() else 0
    arch = LLVM_ARCH.get(llvm_cpu) or ZEN.get(family, "")
    flags = info.get("flags", "").split()
    avx = "avx512f" if "avx512f" in flags else ("avx2" if "avx2" in flags else "no avx2")
    parts = [p for p in (arch, f"family {family}" if family else "", f"LLVM {llvm_cpu}", avx) if p]
    return f"{name} ({', '.join(parts)}), {os.cpu_count()} cores"
