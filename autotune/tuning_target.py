"""What tuning needs to know about where kernels run: the search space, the features, the
measurement and what each record says about the device.

The CPU (one or more threads) and the GPU targets (an OpenCL or CUDA preset of
passes/schedule/gpu_target.py) differ in exactly these four things; the tuning loop
(tuner.py), the task scheduler, transfer learning and applying records are the same code
for both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autotune.measure.gpu_measure import DEFAULT_PRESETS
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo

CPU = "cpu"
GPU_APIS = ("opencl", "cuda")


@dataclass(frozen=True)
class TuningTarget:
    """`api`: cpu, opencl or cuda; `preset`: the GPU schedule target (None on the CPU);
    `threads`: CPU threads the candidates run on (1 on a GPU)."""

    api: str = CPU
    preset: str | None = None
    threads: int = 1
    _device: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_gpu(self) -> bool:
        return self.api in GPU_APIS

    @property
    def record_preset(self) -> str | None:
        """The GPU schedule preset (named, or the api's default; None on the CPU): what the
        space, features and measurement are for, and the `preset` field of this target's
        records, which Database queries take so one database holds CPU and GPU records."""
        return (self.preset or DEFAULT_PRESETS[self.api]) if self.is_gpu else None

    def space(self, info: KernelInfo) -> Any:
        """The task's search space (autotune/space.py or autotune/gpu_space.py)."""
        if self.is_gpu:
            from autotune.gpu_space import GpuSearchSpace
            from passes.schedule.gpu_target import gpu_target

            return GpuSearchSpace(info, gpu_target(self.record_preset or ""))
        from autotune.space import SearchSpace

        return SearchSpace(info, threads=self.threads)

    def features(self, info: KernelInfo, schedules: list[Schedule]) -> np.ndarray:
        """Cost-model features of the schedules (each target's own analytic model)."""
        if self.is_gpu:
            from autotune.gpu_features import gpu_features
            from passes.schedule.gpu_target import gpu_target

            return gpu_features(info, schedules, gpu_target(self.record_preset or ""))
        from autotune.features import features

        return features(info, schedules)

    def measure_fn(self) -> Callable:
        """`measure(task, candidates, ...)` on this target (looked up per call: tests replace
        autotune.measure.measure)."""
        import autotune.measure

        if self.is_gpu:
            return functools.partial(
                autotune.measure.measure,
                target=self.api,
                preset=self.record_preset,
            )
        return functools.partial(autotune.measure.measure, threads=self.threads)

    def record_fields(self) -> dict[str, Any]:
        """What every record of this target adds: on a GPU the device (name, driver, compute
        capability), the preset and the L2 policy of the timing, so records of two devices are
        never mistaken for one another."""
        if not self.is_gpu:
            return {}
        if not self._device:
            from autotune.measure.gpu_runner import device_info

            self._device.update(self._fields_on(device_info(self.api)))
        return dict(self._device)

    def on_device(self, device: dict[str, Any]) -> TuningTarget:
        """This GPU target measured on `device` (another machine's, e.g. dask workers'
        DaskMeasurer.device) rather than on this machine's: what its records carry and accept."""
        if not self.is_gpu:
            raise ValueError("a CPU target has no device")
        return TuningTarget(self.api, self.preset, self.threads, self._fields_on(device))

    def _fields_on(self, device: dict[str, Any]) -> dict[str, Any]:
        from autotune.measure.gpu_runner import L2_POLICY

        return {"device": dict(device), "preset": self.record_preset, "l2_policy": L2_POLICY}

    def accepts(self, record: dict[str, Any]) -> bool:
        """Whether a record (of this target's space) was measured here: on a GPU, on the same
        device with the same preset (one space hash covers every device of a preset)."""
        if not self.is_gpu:
            return True
        mine = self.record_fields()
        return record.get("device") == mine["device"] and record.get("preset") == mine["preset"]


def tuning_target(api: str = CPU, preset: str | None = None, threads: int = 1) -> TuningTarget:
    """A checked TuningTarget; ValueError naming the choices otherwise."""
    if api != CPU and api not in GPU_APIS:
        raise ValueError(f"unknown tuning target '{api}' (known: cpu, {', '.join(GPU_APIS)})")
    if api != CPU and threads != 1:
        raise ValueError("--threads is a CPU option; a GPU target runs on its device's threads")
    if preset is not None:
        from passes.schedule.gpu_target import gpu_target

        if api == CPU:
            raise ValueError("a schedule preset is for a GPU target (opencl or cuda)")
        if gpu_target(preset).api != api:
            raise ValueError(f"preset '{preset}' is for {gpu_target(preset).api}, not {api}")
    return TuningTarget(api, preset, threads)
