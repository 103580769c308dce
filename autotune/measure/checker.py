"""The checker: each task's reference outputs (its default schedule), and the comparison with them.

The reference of a (task, target, threads) is built with the first batch measured for the task,
run once by the same runner on the same inputs as the candidates, and kept for the process. It
is the default schedule for that many threads (`reference_passes`): what a paired measurement
times beside each candidate (runner.py), so a two-thread candidate is compared with the
two-thread default, not the serial one. When it cannot
be made (the kernel's arguments, its build, a crash, a timeout), the reason is kept instead and
no candidate of the task is run or counted as correct (`reference_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from autotune.measure.interfaces import (
    BuildInput,
    BuildResult,
    Reference,
    RunInputs,
    Runner,
    RunSettings,
)
from autotune.measure.kernel import kernel_signature, private_args

if TYPE_CHECKING:
    from autotune.task import Task

REFERENCE_PASSES = ["default-schedule"]


def reference_passes(threads: int = 1) -> list[str]:
    """The default schedule for `threads` threads (REFERENCE_PASSES for one)."""
    return list(REFERENCE_PASSES) if threads <= 1 else [f"default-schedule{{threads={threads}}}"]


REFERENCE_TIMEOUT_S = 60.0  # the least time a reference run gets (it defines correctness)


def mismatch(
    outputs: list[np.ndarray],
    reference: list[np.ndarray],
    rtol: float,
    atol: float,
    skip: frozenset[int] | set[int] = frozenset(),
) -> str:
    """'' if every argument not in `skip` matches the reference (floats: within rtol, and atol
    scaled by the reference's largest magnitude; others: exactly), else which one and how not."""
    for i, (got, ref) in enumerate(zip(outputs, reference, strict=True)):
        if i in skip:
            continue
        if got.dtype.kind != "f":
            if not np.array_equal(got, ref):
                return f"argument {i}: differs from the reference"
            continue
        scale = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)) or 1.0
        close = np.isclose(got, ref, rtol=rtol, atol=atol * scale, equal_nan=True)
        if not close.all():
            bad = int((~close).sum())
            err = float(np.nanmax(np.abs(got.astype(np.float64) - ref)))
            return (
                f"argument {i}: {bad}/{close.size} elements differ from the reference "
                f"(max abs error {err:.3g}, scale {scale:.3g})"
            )
    return ""


class ReferenceChecker:
    """Checks candidates against the default schedule of their task (see the module docstring)."""

    def __init__(self) -> None:
        # per (workload, target, threads)
        self._references: dict[tuple[str, str, int], Reference] = {}

    def reference(self, task: Task, target: str, threads: int = 1) -> Reference | None:
        return self._references.get((task.workload_key, target, threads))

    def reference_input(self, task: Task, threads: int = 1) -> BuildInput:
        return BuildInput(task, reference_passes(threads))

    def make_reference(
        self, task: Task, target: str, build: BuildResult, runner: Runner, settings: RunSettings
    ) -> Reference:
        ref = self._make(task, build, runner, settings)
        self._references[(task.workload_key, target, settings.threads)] = ref
        return ref

    def _make(
        self, task: Task, build: BuildResult, runner: Runner, settings: RunSettings
    ) -> Reference:
        try:
            signature = kernel_signature(task.kernel_ir)
            unspecified = frozenset(private_args(task.kernel_ir))
        except Exception as e:
            why = f"compile_error: the kernel's arguments: {type(e).__name__}: {e}"
            return Reference([], None, why)
        if not build.ok:
            return Reference(signature, None, f"compile_error: {build.error}")
        timeout_s = max(settings.timeout_s, REFERENCE_TIMEOUT_S)
        once = RunSettings(repeat=1, number=1, timeout_s=timeout_s, threads=settings.threads)
        (run,) = runner.run(RunInputs(task.workload_key, signature), [build], once)
        if not run.ok or run.outputs is None:
            return Reference(signature, None, f"{run.error_kind}: {run.error}")
        return Reference(signature, run.outputs, "", unspecified, build.artifact)

    def check(
        self, outputs: list[np.ndarray], reference: Reference, rtol: float, atol: float
    ) -> str:
        if reference.outputs is None:
            return f"no reference: {reference.error}"
        return mismatch(outputs, reference.outputs, rtol, atol, reference.unspecified)

    def clear(self) -> None:
        self._references.clear()


DEFAULT_CHECKER = ReferenceChecker()
"""The process's checker: its references live as long as the process (or clear_references)."""


def clear_references() -> None:
    """Forget the cached default-schedule reference outputs (e.g. after changing the compiler)."""
    DEFAULT_CHECKER.clear()
