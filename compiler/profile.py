"""Where a compiled model's time goes, kernel by kernel, as it runs (`ziggurat bench --profile`).

The model is compiled with `profile-kernels` (passes/transforms/profile_kernels.py), which counts
the cycles of every kernel call of @main in a global; this module runs it, reads the counts and
turns them into seconds with the counter's measured rate. Like TVM's debug executor, but the
kernels run in place, in the model's order, with the caches and threads they really have.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr
from xdsl.passes import ModulePass

from compiler import zoo
from compiler.backends.llvm_cpu.cycle_counter import cycles_per_second
from compiler.backends.llvm_cpu.fma_peak import fma_peak_flops
from compiler.errors import CompileError
from compiler.frontend.onnx import load_model
from compiler.model import CompiledModel, compile_model
from passes.transforms.profile_kernels import PROFILE_ATTR, PROFILE_GLOBAL

PROFILE_PASS = "profile-kernels"


@dataclass(frozen=True)
class KernelTime:
    """One kernel call site of @main: what it computes and its time per model run."""

    kernel: str
    what: str
    flops: int
    seconds: float

    @property
    def kind(self) -> str:
        """The first word of `what`: conv, dwconv, matmul, pool, reduce, elementwise."""
        return self.what.split(" ", 1)[0]

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class ModelProfile:
    rows: list[KernelTime]  # call order
    total_s: float  # @main per run, kernels and all between them
    runs: int
    threads: int
    peak_flops: float | None = None  # one thread's measured FMA peak (fma_peak.py); None: unknown

    @property
    def kernels_s(self) -> float:
        return sum(r.seconds for r in self.rows)

    def by_kind(self) -> dict[str, tuple[int, float]]:
        """kind -> (call sites, seconds per run), slowest first."""
        acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for r in self.rows:
            acc[r.kind][0] += 1
            acc[r.kind][1] += r.seconds
        return {k: (int(n), s) for k, (n, s) in sorted(acc.items(), key=lambda kv: -kv[1][1])}

    def table(self, top: int | None = 20) -> str:
        """The slowest `top` call sites (all if None), then the time per kind of kernel."""
        total = self.total_s or 1.0
        rows = sorted(enumerate(self.rows), key=lambda ir: -ir[1].seconds)
        shown = rows if top is None else rows[:top]
        ceiling = self.peak_flops * max(1, self.threads) if self.peak_flops else None
        lines = [
            f"profile: {len(self.rows)} kernel calls, {self.runs} runs, {self.threads} thread(s); "
            f"@main {self.total_s * 1e3:.3f} ms per run, kernels {self.kernels_s * 1e3:.3f} ms",
        ]
        if ceiling:
            lines.append(
                f"FMA peak {ceiling / 1e9:.1f} GFLOP/s (measured on this host, {self.threads} "
                "thread(s)); 'peak': a kernel's share of it"
            )
        lines.append(
            f"{'call':>5}  {'kernel':<12} {'what':<36} {'ms':>8} {'share':>6} {'GFLOP/s':>8}"
            + (f" {'peak':>5}" if ceiling else "")
        )
        for i, r in shown:
            lines.append(
                f"{i:>5}  {r.kernel:<12} {r.what:<36} {r.seconds * 1e3:>8.3f} "
                f"{100 * r.seconds / total:>5.1f}% {r.gflops:>8.1f}"
                + (f" {100 * r.gflops * 1e9 / ceiling:>4.0f}%" if ceiling else "")
            )
        if len(shown) < len(rows):
            rest = sum(r.seconds for _, r in rows[len(shown) :])
            lines.append(
                f"{'':>5}  {f'({len(rows) - len(shown)} more)':<49} {rest * 1e3:>8.3f} "
                f"{100 * rest / total:>5.1f}%"
            )
        lines.append("by kind:")
        flops: dict[str, int] = defaultdict(int)
        for r in self.rows:
            flops[r.kind] += r.flops
        for kind, (n, s) in self.by_kind().items():
            rate = flops[kind] / s if s > 0 else 0.0
            lines.append(
                f"  {kind:<12} {n:>4} calls {s * 1e3:>9.3f} ms {100 * s / total:>5.1f}% "
                f"{rate / 1e9:>8.1f} GFLOP/s"
                + (f" {100 * rate / ceiling:>4.0f}% of peak" if ceiling else "")
            )
        between = self.total_s - self.kernels_s
        lines.append(
            f"  {'(between)':<12} {'':>10} {between * 1e3:>9.3f} ms {100 * between / total:>5.1f}%"
        )
        return "\n".join(lines)


def cycle_counters(compiled: CompiledModel) -> np.ndarray:
    """The live counters of a model compiled with profile-kernels: one per kernel call, in call
    order, then @main's; each accumulates cycles over every run until reset."""
    return compiled.program.global_view(PROFILE_GLOBAL, np.int64, len(_slots(compiled)) + 1)


def _slots(compiled: CompiledModel) -> list[tuple[str, str, int]]:
    attr = compiled.notes.get(PROFILE_ATTR)
    if not isinstance(attr, ArrayAttr):
        raise CompileError(
            f"the model was not compiled with {PROFILE_PASS} (no {PROFILE_ATTR} attribute)"
        )
    out = []
    for row in attr.data:
        assert isinstance(row, DictionaryAttr)
        kernel, what, flops = (row.data[k] for k in ("kernel", "what", "flops"))
        assert isinstance(kernel, StringAttr) and isinstance(what, StringAttr)
        assert isinstance(flops, IntegerAttr)
        out.append((kernel.data, what.data, flops.value.data))
    return out


def profile_compiled(
    compiled: CompiledModel,
    feeds: Mapping[str, np.ndarray],
    seconds: float = 1.0,
    min_runs: int = 3,
) -> ModelProfile:
    """Run a model compiled with profile-kernels for `seconds` (at least `min_runs` runs, after
    one warm-up) and read its per-kernel cycle counts."""
    slots = _slots(compiled)
    counters = cycle_counters(compiled)
    run = compiled.runner(feeds)
    run()  # warm-up: first touches of the arena and weights
    counters[:] = 0
    runs, start = 0, time.perf_counter()
    while runs < min_runs or time.perf_counter() - start < seconds:
        run()
        runs += 1
    per_run = counters.astype(np.float64) / (runs * cycles_per_second())
    rows = [
        KernelTime(kernel, what, flops, float(s))
        for (kernel, what, flops), s in zip(slots, per_run[:-1], strict=True)
    ]
    return ModelProfile(rows, float(per_run[-1]), runs, compiled.threads, fma_peak_flops())


def profile_model(
    model: Any,
    feeds: Mapping[str, np.ndarray] | None = None,
    threads: int = 1,
    seconds: float = 1.0,
    schedules: Sequence[str | ModulePass] = (),
    layout: str = "auto",
) -> ModelProfile:
    """Compile `model` (an ONNX file or ModelProto) with its kernel calls profiled, run it on
    `feeds` (random inputs by default) and return where the time went."""
    proto = load_model(model)
    compiled = compile_model(
        proto, schedules=[*schedules, PROFILE_PASS], threads=threads, layout=layout
    )
    return profile_compiled(compiled, zoo.random_inputs(proto) if feeds is None else feeds, seconds)
