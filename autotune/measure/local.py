"""A measurement composed from a builder, a runner and a checker; `measure`: the local CPU one."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from autotune.measure.builder import LocalBuilder
from autotune.measure.checker import DEFAULT_CHECKER
from autotune.measure.interfaces import (
    Builder,
    BuildInput,
    Checker,
    MeasureResult,
    RunInputs,
    Runner,
    RunSettings,
)
from autotune.measure.runner import default_runner

if TYPE_CHECKING:
    from autotune.task import Task


def measure_with(
    builder: Builder,
    runner: Runner,
    checker: Checker,
    task: Task,
    candidates: list[list[str]],
    target: str,
    settings: RunSettings,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    kernel_irs: list[str | None] | None = None,
) -> list[MeasureResult]:
    """Build every candidate (and the task's reference, the first time), then run and check each
    on `runner`. Failures are results (`error_kind`), never exceptions."""
    irs = kernel_irs if kernel_irs is not None else [None] * len(candidates)
    if len(irs) != len(candidates):
        raise ValueError("kernel_irs must have one entry per candidate")
    reference = checker.reference(task, target)
    inputs = [BuildInput(task, list(c), ir) for c, ir in zip(candidates, irs, strict=True)]
    if reference is None:
        inputs.append(checker.reference_input(task))
    built = builder.build(inputs)

    if reference is None:
        reference = checker.make_reference(task, target, built.pop(), runner, settings.timeout_s)
        if reference.outputs is None:  # once per task; its records carry the reason
            warnings.warn(
                f"measure: no reference output for {task.name} ({reference.error}): "
                "its candidates fail as reference_error",
                stacklevel=3,  # measure's caller
            )

    results: list[MeasureResult | None] = []  # None: to be run
    for b in built:
        if not b.ok:
            results.append(
                MeasureResult(error_kind="compile_error", error=b.error, build_s=b.build_s)
            )
        elif reference.outputs is None:  # nothing could check its output: not run, not correct
            why = "the task's reference (default schedule) failed, so no output can be checked: "
            results.append(
                MeasureResult(
                    error_kind="reference_error", error=why + reference.error, build_s=b.build_s
                )
            )
        else:
            results.append(None)
    runnable = [b for b, r in zip(built, results, strict=True) if r is None]
    if not runnable:
        return [r for r in results if r is not None]

    ref = reference

    def check(outputs: list[np.ndarray]) -> str:
        return checker.check(outputs, ref, rtol, atol)

    runs = iter(runner.run(RunInputs(task.workload_key, ref.signature), runnable, settings, check))
    out = []
    for b, r in zip(built, results, strict=True):
        if r is None:
            run = next(runs)  # a run that failed before its timing has no costs, no run_s
            r = MeasureResult(run.costs, run.error_kind, run.error, b.build_s, run.run_s)
        out.append(r)
    return out


def measure(
    task: Task,
    candidates: list[list[str]],
    target: str = "cpu",
    repeat: int = 5,
    number: int = 0,
    timeout_s: float = 10.0,
    workers: int = 2,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    kernel_irs: list[str | None] | None = None,
    runner: Runner | None = None,
    threads: int = 1,
) -> list[MeasureResult]:
    """Build every candidate (pass specs) in `workers` processes, then run each in the runner
    process (this process's LocalRunner unless `runner` is given) and check it against the task's
    default-schedule reference.

    `number` = calls per timed repeat (0: enough for MIN_REPEAT_S); costs are seconds per call.
    `timeout_s` bounds each candidate's run (and each build). `kernel_irs[i]`, if given, replaces
    the task's kernel IR for candidate i (the reference always uses the task's own IR). Object
    code with parallel loops runs them on `threads` threads.
    """
    if target != "cpu":
        raise ValueError(f"measure: unknown target {target!r} (only 'cpu')")
    return measure_with(
        LocalBuilder(workers, timeout_s),
        runner or default_runner(),
        DEFAULT_CHECKER,
        task,
        candidates,
        target,
        RunSettings(repeat, number, timeout_s, threads),
        rtol,
        atol,
        kernel_irs,
    )
