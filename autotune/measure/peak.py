"""How fast a device could possibly run a task: a bound that refuses timings no device makes.

A remote measurement (autotune/distributed.py) is another machine's word. A cost whose GFLOP/s
is beyond what the device can issue is refused (`implausible`): it becomes an error result of
kind IMPLAUSIBLE, kept in the database like any failure but never ranked.

The bound is derived from the device, with room to spare rather than fitted to one machine:
- a CPU: threads (at most one core each) x f32 lanes of its widest vector unit (from its LLVM
  features, or this host's cpu_target) x FMA units x 2 FLOPs per multiply-add x CLOCK_HZ;
- a GPU: compute units x the most work-items of a work-group (far more than the lanes a
  compute unit issues per cycle) x 2 x CLOCK_HZ;
each times SAFETY (narrow types: an int8 dot product does 4x the multiply-adds of an f32 FMA
per lane, f16 2x; FLOPs counted per iteration of an elementwise anchor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from autotune.measure.interfaces import MeasureResult

IMPLAUSIBLE = "implausible_timing"
"""The error kind of a timing refused as faster than the device's peak (or not a positive,
finite number of seconds)."""

CLOCK_HZ = 6e9
"""Above the boost clock of any CPU or GPU core."""

SAFETY = 8.0
"""Headroom over the FMA peak (see the module docstring)."""


def _lanes(features: str) -> int:
    """f32 lanes of the widest vector unit an LLVM feature string ("+avx2,+avx512f,...") names
    (the rule of passes/schedule/target.host_vector_width)."""
    on = {f[1:] for f in features.split(",") if f.startswith("+")}
    if "avx512f" in on:
        return 16
    if on & {"avx2", "avx"}:
        return 8
    return 4


def cpu_peak_flops(threads: int = 1, features: str | None = None) -> float:
    """A bound on the FLOP/s `threads` threads reach on a CPU with LLVM `features` (this host's
    cpu_target when None)."""
    from passes.schedule.cpu_target import host_cpu

    host = host_cpu()
    lanes = host.width if features is None else _lanes(features)
    return max(1, threads) * lanes * host.fma_units * 2 * CLOCK_HZ * SAFETY


def gpu_peak_flops(device: Mapping[str, Any]) -> float | None:
    """A bound on the FLOP/s of a GPU described by gpu_runner.device_info (None: the description
    lacks its compute units or work-group size)."""
    units, group = device.get("compute_units"), device.get("max_work_group_size")
    if not all(type(v) is int and v > 0 for v in (units, group)):
        return None
    return float(units) * float(group) * 2 * CLOCK_HZ * SAFETY  # type: ignore[arg-type]


def implausible(result: MeasureResult, flops: float, peak_flops: float | None) -> MeasureResult:
    """`result`, or (a success or paired timing whose costs are not positive finite seconds, or
    imply more than `peak_flops` FLOP/s for a task of `flops` per call) an IMPLAUSIBLE result
    naming the claim; no bound (`peak_flops` None, `flops` 0) checks the numbers only."""
    if not result.ok:
        return result
    why = ""
    for name, costs in (("cost", result.costs), ("baseline cost", result.baseline_costs)):
        bad = [c for c in costs if not (isinstance(c, int | float) and math.isfinite(c) and c > 0)]
        if bad:
            why = f"a {name} of {bad[0]!r} is not a positive finite number of seconds"
            break
        if costs and peak_flops and flops > 0 and flops / min(costs) > peak_flops:
            why = (
                f"a {name} of {min(costs):.3g} s is {flops / min(costs) / 1e9:.4g} GFLOP/s, "
                f"beyond the device's peak (at most {peak_flops / 1e9:.4g} GFLOP/s)"
            )
            break
    if not why:
        return result
    return MeasureResult([], IMPLAUSIBLE, f"timing refused: {why}", result.build_s, result.run_s)
