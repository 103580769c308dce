"""Measuring candidates on a GPU target: GpuBuilder + GpuRunner, checked against the CPU.

A candidate's outputs on the device are judged against an independent reference: the task's
default schedule compiled for this CPU and run by the CPU runner, i.e. the very reference (and
numbers) a CPU tune of the task checks against. A reference made on the device itself would
share the GPU code generator's bugs with the candidates it judges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from autotune.measure.builder import LocalBuilder
from autotune.measure.checker import DEFAULT_CHECKER, ReferenceChecker
from autotune.measure.compose import measure_with
from autotune.measure.gpu_builder import GpuBuilder
from autotune.measure.gpu_runner import default_gpu_runner
from autotune.measure.interfaces import (
    BuildInput,
    BuildResult,
    MeasureResult,
    Reference,
    Runner,
    RunSettings,
)
from autotune.measure.runner import default_runner

if TYPE_CHECKING:
    from autotune.task import Task

CPU = "cpu"
DEFAULT_PRESETS = {"opencl": "opencl-cpu", "cuda": "cuda"}
"""The schedule preset a GPU api is measured and tuned with unless another is named (PoCL on this
host for OpenCL: `opencl-gpu` is the one for an OpenCL GPU)."""


@dataclass(eq=False)
class CpuReferenceChecker:
    """A Checker for a GPU target whose references are `checker`'s on the CPU: made (once per
    task and process, shared with CPU tuning) by the CPU builder and `cpu_runner`, whatever
    target or runner it is asked for."""

    checker: ReferenceChecker = DEFAULT_CHECKER
    cpu_runner: Runner | None = None
    workers: int = 2
    timeout_s: float = 10.0

    def prepare(self, task: Task) -> Reference:
        """The task's CPU reference, made now unless it was before (a failure warns, as a CPU
        measurement does, and its candidates fail as reference_error)."""
        reference = self.checker.reference(task, CPU)
        if reference is None:
            measure_with(
                LocalBuilder(self.workers, self.timeout_s),
                self.cpu_runner or default_runner(),
                self.checker,
                task,
                [],
                CPU,
                RunSettings(timeout_s=self.timeout_s),
            )
            reference = self.checker.reference(task, CPU)
        assert reference is not None  # measure_with made it
        return reference

    def reference(self, task: Task, target: str, threads: int = 1) -> Reference | None:
        return self.checker.reference(task, CPU)  # a device's kernels have no thread count

    def reference_input(self, task: Task, threads: int = 1) -> BuildInput:
        return self.checker.reference_input(task)

    def make_reference(
        self, task: Task, target: str, build: BuildResult, runner: Runner, settings: RunSettings
    ) -> Reference:
        """The CPU's (`build` and `runner`, the device's, are not used: see the class)."""
        return self.prepare(task)

    def check(
        self, outputs: list[np.ndarray], reference: Reference, rtol: float, atol: float
    ) -> str:
        return self.checker.check(outputs, reference, rtol, atol)


def measure_gpu(
    task: Task,
    candidates: list[list[str]],
    api: str,
    preset: str,
    settings: RunSettings,
    workers: int = 2,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    kernel_irs: list[str | None] | None = None,
    runner: Runner | None = None,
) -> list[MeasureResult]:
    """Build every candidate for the GPU schedule preset `preset` in `workers` processes, run
    each on `api`'s device in the runner process (this process's GpuRunner for `api` unless
    `runner` is given) and check it against the task's CPU reference (CpuReferenceChecker).

    As autotune.measure.measure: `settings.number` = calls per timed sample (0: samples of at
    least gpu_runner.MIN_SAMPLE_S), costs in seconds per call, `settings.timeout_s` bounds each
    build and each run, `kernel_irs[i]` replaces the task's kernel IR for candidate i (not the
    reference's). Timings are warm (gpu_runner.L2_POLICY); a device's kernels have no thread
    count, nor a CPU baseline to be paired with (`settings.threads` and `paired` do not apply)."""
    settings = replace(settings, threads=1, paired=False)
    timeout_s = settings.timeout_s
    builder = GpuBuilder(preset, workers, timeout_s)
    if builder.api != api:
        raise ValueError(f"measure_gpu: preset {preset!r} is for {builder.api}, not {api}")
    checker = CpuReferenceChecker(DEFAULT_CHECKER, None, workers, timeout_s)
    checker.prepare(task)  # before the device batch, which then needs no reference build
    return measure_with(
        builder,
        runner or default_gpu_runner(api),
        checker,
        task,
        candidates,
        api,
        settings,
        rtol,
        atol,
        kernel_irs,
    )
