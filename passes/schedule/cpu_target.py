"""What a CPU offers a schedule: vector lanes, vector registers and its data caches.

The default schedule (default.py) is derived from one of these rather than from constants fitted
to one machine: its register-tile budget from the register file, its cache tiles from the L1
and L2 sizes, and whether an operand is packed from the L2's geometry (cache_fit.py). `host_cpu()`
reads this machine (LLVM's host features, the kernel's sysfs cache description); the presets pin
a machine so that tests and `default-schedule{cpu=...}` do not depend on the host.

FMA units are not described: the smallest register-tile budget here (half the register file: 8
AVX2 or 16 AVX-512 accumulators) already covers latency x pipes of every x86 core the presets
name (4 cycles x 2 pipes), so it would change no decision.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

from passes.schedule.target import host_vector_width


@dataclass(frozen=True)
class CacheLevel:
    """One data cache: total bytes, associativity (ways) and line bytes."""

    size: int
    ways: int
    line: int = 64

    @property
    def sets(self) -> int:
        return max(1, self.size // (self.ways * self.line))


@dataclass(frozen=True)
class CpuTarget:
    """One kind of CPU core, as a schedule sees it."""

    name: str
    width: int
    """f32 lanes of the widest vector unit."""
    registers: int
    """Vector registers (32 with AVX-512, 16 with AVX/AVX2)."""
    l1: CacheLevel
    l2: CacheLevel
    fma_in_flight: int = 8
    """Independent FMAs that keep the FMA units busy: units x latency (2 x 4 cycles on Zen 4,
    Zen 5 and Intel cores since Skylake; Haswell's 2 x 5 is within a row of it)."""
    fma_units: int = 2
    """Vector FMAs issued per cycle (2 on every x86 core above)."""

    @property
    def macs_per_cycle(self) -> int:
        """f32 multiply-adds per cycle at the FMA peak."""
        return self.width * self.fma_units

    @property
    def default_accumulators(self) -> int:
        """The default's register-tile budget in vector accumulators: half the register file
        (the rest holds a step's vector operands and broadcasts; the tuner explores more)."""
        return self.registers // 2

    @property
    def has_scalef(self) -> bool:
        """AVX-512 (32 vector registers) has vscalefps, x * 2^n in one instruction: what LLVM
        makes of a vector `llvm.ldexp` (elsewhere it is a libm call per lane)."""
        return self.registers == 32

    def with_width(self, width: int) -> CpuTarget:
        """This CPU's code restricted (or, for a what-if, widened) to `width` lanes; the
        register file stays (AVX-512 has 32 registers at 256 bits too)."""
        return self if width == self.width else replace(self, width=width)


PRESETS = {
    # AMD Zen 4: 32 KiB 8-way L1d, 1 MiB 8-way L2 per core; AVX-512 (double-pumped)
    "znver4": CpuTarget("znver4", 16, 32, CacheLevel(32 << 10, 8), CacheLevel(1 << 20, 8)),
    # AMD Zen 5: 48 KiB 12-way L1d, 1 MiB 16-way L2; full-width AVX-512
    "znver5": CpuTarget("znver5", 16, 32, CacheLevel(48 << 10, 12), CacheLevel(1 << 20, 16)),
    # an AVX2 core (Haswell to Zen 3): 32 KiB 8-way L1d, 512 KiB 8-way L2
    "x86-64-v3": CpuTarget("x86-64-v3", 8, 16, CacheLevel(32 << 10, 8), CacheLevel(512 << 10, 8)),
}
"""Named CPUs for reproducible schedules (`default-schedule{cpu=znver4}`)."""

SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
FALLBACK = PRESETS["x86-64-v3"]
"""Cache levels assumed where the kernel does not describe them (small: tiles stay safe)."""


def _size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _sysfs_caches(root: Path = SYSFS_CACHES) -> dict[int, CacheLevel]:
    """Data (or unified) cache levels of cpu0 as the kernel reports them; {} when it does not."""
    levels: dict[int, CacheLevel] = {}
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((index / "level").read_text())
            size = _size((index / "size").read_text())
            ways = int((index / "ways_of_associativity").read_text() or 0)
            line = int((index / "coherency_line_size").read_text() or 64)
        except (OSError, ValueError):
            continue
        if size > 0:
            levels[level] = CacheLevel(size, max(ways, 1), max(line, 1))
    return levels


@functools.cache
def host_cpu() -> CpuTarget:
    """This machine: LLVM's view of its vector unit, the kernel's view of its caches."""
    width = host_vector_width()
    caches = _sysfs_caches()
    return CpuTarget(
        "host",
        width,
        32 if width >= 16 else 16,
        caches.get(1, FALLBACK.l1),
        caches.get(2, FALLBACK.l2),
    )


def cpu_target(name: str = "") -> CpuTarget:
    """The preset called `name` ("" or "host": this machine); ValueError naming the choices."""
    if name in ("", "host"):
        return host_cpu()
    if name not in PRESETS:
        raise ValueError(f"unknown CPU '{name}' (known: host, {', '.join(PRESETS)})")
    return PRESETS[name]
