"""A measurement composed from a builder, a runner and a checker (`measure_with`): what the
CPU's `measure` (local.py) and a GPU target's (gpu_measure.py) both are."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from autotune.measure.interfaces import (
    Builder,
    BuildInput,
    Checker,
    MeasureResult,
    RunInputs,
    Runner,
    RunSettings,
)

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
    threads = settings.threads
    reference = checker.reference(task, target, threads)
    inputs = [BuildInput(task, list(c), ir) for c, ir in zip(candidates, irs, strict=True)]
    if reference is None:
        inputs.append(checker.reference_input(task, threads))
    built = builder.build(inputs)

    if reference is None:
        reference = checker.make_reference(task, target, built.pop(), runner, settings)
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

    baseline = ref.artifact if settings.paired else None
    run_inputs = RunInputs(task.workload_key, ref.signature, baseline)
    runs = iter(runner.run(run_inputs, runnable, settings, check))
    out = []
    for b, r in zip(built, results, strict=True):
        if r is None:
            run = next(runs)  # a run that failed before its timing has no costs, no run_s
            r = MeasureResult(
                run.costs, run.error_kind, run.error, b.build_s, run.run_s, run.baseline_costs
            )
        out.append(r)
    return out
