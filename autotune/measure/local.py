"""`measure`: a measurement on this machine, the local CPU composition (or, for an OpenCL or CUDA
target, gpu_measure.py's); the composition itself is compose.py's `measure_with`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.measure.builder import LocalBuilder
from autotune.measure.checker import DEFAULT_CHECKER
from autotune.measure.compose import measure_with
from autotune.measure.gpu_measure import DEFAULT_PRESETS, measure_gpu
from autotune.measure.interfaces import MeasureResult, Runner, RunSettings
from autotune.measure.runner import default_runner

if TYPE_CHECKING:
    from autotune.task import Task


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
    preset: str | None = None,
    paired: bool = True,
) -> list[MeasureResult]:
    """Build every candidate (pass specs) in `workers` processes, then run each in the runner
    process (this process's LocalRunner unless `runner` is given) and check it against the task's
    default-schedule reference.

    `number` = calls per timed repeat (0: enough for MIN_REPEAT_S); costs are seconds per call.
    `timeout_s` bounds each candidate's run (and each build). `kernel_irs[i]`, if given, replaces
    the task's kernel IR for candidate i (the reference always uses the task's own IR). Object
    code with parallel loops runs them on `threads` threads. `paired`: the default schedule is
    timed alternately with each candidate (MeasureResult.baseline_costs; see runner.py).

    `target` "opencl" or "cuda": gpu_measure.measure_gpu, for the GPU schedule `preset`
    (default: opencl-cpu, cuda), checked against the CPU's reference.
    """
    settings = RunSettings(repeat, number, timeout_s, threads, paired)
    if target in ("opencl", "cuda"):
        preset = preset or DEFAULT_PRESETS[target]
        return measure_gpu(
            task, candidates, target, preset, settings, workers, rtol, atol, kernel_irs, runner
        )
    if target != "cpu":
        raise ValueError(f"measure: unknown target {target!r} (cpu, opencl, cuda)")
    return measure_with(
        LocalBuilder(workers, timeout_s),
        runner or default_runner(),
        DEFAULT_CHECKER,
        task,
        candidates,
        target,
        settings,
        rtol,
        atol,
        kernel_irs,
    )
