"""What tuning needs to know about where kernels run: the search space, the features, the
measurement and what each record says about the device.

`TuningTarget` is that interface; `CpuTuningTarget` (one or more threads) and `GpuTuningTarget`
(an OpenCL or CUDA preset of passes/schedule/gpu_target.py) implement it. The tuning loop
(tuner.py), the task scheduler, transfer learning and applying records are the same code for
both: what differs is asked of the target, never switched on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from autotune.measure import LocalMeasurer
from autotune.measure.gpu_measure import DEFAULT_PRESETS
from autotune.measure.interfaces import Measurer
from autotune.measure.peak import cpu_peak_flops, gpu_peak_flops
from autotune.record import TuningRecord
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo

if TYPE_CHECKING:
    from autotune.knob_space import KnobSpace

CPU = "cpu"
GPU_APIS = ("opencl", "cuda")


class TuningTarget(Protocol):
    """Where a tune measures: `api` (cpu, opencl or cuda), `preset` (the GPU schedule target;
    None on the CPU), `threads` (CPU threads the candidates run on; 1 on a GPU)."""

    @property
    def api(self) -> str: ...

    @property
    def preset(self) -> str | None: ...

    @property
    def threads(self) -> int: ...

    @property
    def record_preset(self) -> str | None:
        """The `preset` field of this target's records (None on the CPU), which Database
        queries take so one database holds CPU and GPU records."""
        ...

    @property
    def pairs_baselines(self) -> bool:
        """Whether a remote measurer's baseline costs (the default schedule timed beside each
        candidate) are comparable here: False where timings are not paired (a GPU's)."""
        ...

    def space(self, info: KernelInfo) -> KnobSpace:
        """The task's search space (autotune/space.py or autotune/gpu_space.py)."""
        ...

    def features(self, info: KernelInfo, schedules: list[Schedule]) -> np.ndarray:
        """Cost-model features of the schedules (each target's own analytic model)."""
        ...

    def measurer(self) -> Measurer:
        """The measurement on this machine (autotune.measure.measure for this target)."""
        ...

    def remote_measure_kwargs(self) -> dict[str, Any]:
        """What a remote measurer (autotune/distributed.py) passes to `measure` on its workers."""
        ...

    def peak_flops(self, measurer: Measurer) -> float | None:
        """The most FLOP/s `measurer`'s device could reach (autotune/measure/peak.py)."""
        ...

    def stamp(self, record: TuningRecord) -> TuningRecord:
        """`record` with what every record of this target adds (a GPU's device fields)."""
        ...

    def accepts(self, record: TuningRecord) -> bool:
        """Whether a record (of this target's space) was measured here."""
        ...

    def on_device(self, device: Mapping[str, Any]) -> TuningTarget:
        """This target measured on `device` (another machine's) rather than this machine's."""
        ...

    def describe(self) -> str:
        """Where the candidates run, in words (the tune command's summary line)."""
        ...


@dataclass(frozen=True)
class CpuTuningTarget:
    """The host CPU, candidates running on `threads` threads."""

    threads: int = 1

    @property
    def api(self) -> str:
        return CPU

    @property
    def preset(self) -> str | None:
        return None

    @property
    def record_preset(self) -> str | None:
        return None

    @property
    def pairs_baselines(self) -> bool:
        return True

    def space(self, info: KernelInfo) -> KnobSpace:
        from autotune.space import SearchSpace

        return SearchSpace(info, threads=self.threads)

    def features(self, info: KernelInfo, schedules: list[Schedule]) -> np.ndarray:
        from autotune.features import features

        return features(info, schedules)

    def measurer(self) -> Measurer:
        return LocalMeasurer(kwargs={"threads": self.threads})

    def remote_measure_kwargs(self) -> dict[str, Any]:
        return {"threads": self.threads}

    def peak_flops(self, measurer: Measurer) -> float | None:
        """`threads` cores of the measurer's CPU (its `.target` features; this host's without)."""
        where = measurer.target
        features = where.get("features") if where is not None else None
        return cpu_peak_flops(self.threads, features if isinstance(features, str) else None)

    def stamp(self, record: TuningRecord) -> TuningRecord:
        return record

    def accepts(self, record: TuningRecord) -> bool:
        return True

    def on_device(self, device: Mapping[str, Any]) -> TuningTarget:
        raise ValueError("a CPU target has no device")

    def describe(self) -> str:
        return f"{self.threads} thread(s)"


@dataclass(frozen=True)
class GpuTuningTarget:
    """An OpenCL or CUDA device with a schedule `preset` (None: the api's default)."""

    api: str
    preset: str | None = None
    _device: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def threads(self) -> int:
        return 1

    @property
    def record_preset(self) -> str | None:
        """The GPU schedule preset, named or the api's default: what the space, features and
        measurement are for."""
        return self.preset or DEFAULT_PRESETS[self.api]

    @property
    def pairs_baselines(self) -> bool:
        return False

    def space(self, info: KernelInfo) -> KnobSpace:
        from autotune.gpu_space import GpuSearchSpace
        from passes.schedule.gpu_target import gpu_target

        return GpuSearchSpace(info, gpu_target(self.record_preset or ""))

    def features(self, info: KernelInfo, schedules: list[Schedule]) -> np.ndarray:
        from autotune.gpu_features import gpu_features
        from passes.schedule.gpu_target import gpu_target

        return gpu_features(info, schedules, gpu_target(self.record_preset or ""))

    def measurer(self) -> Measurer:
        return LocalMeasurer(kwargs={"target": self.api, "preset": self.record_preset})

    def remote_measure_kwargs(self) -> dict[str, Any]:
        return {"target": self.api, "preset": self.record_preset}

    def peak_flops(self, measurer: Measurer) -> float | None:
        """The measurer's workers' device (this target's without one)."""
        device = measurer.device or self.record_fields().get("device")
        return gpu_peak_flops(dict(device)) if isinstance(device, Mapping) else None

    def record_fields(self) -> dict[str, Any]:
        """What every record of this target adds: the device (name, driver, compute
        capability), the preset and the L2 policy of the timing, so records of two devices are
        never mistaken for one another."""
        if not self._device:
            from autotune.measure.gpu_runner import device_info

            self._device.update(self._fields_on(device_info(self.api)))
        return dict(self._device)

    def stamp(self, record: TuningRecord) -> TuningRecord:
        mine = self.record_fields()
        return dataclasses.replace(
            record, device=mine["device"], preset=mine["preset"], l2_policy=mine["l2_policy"]
        )

    def accepts(self, record: TuningRecord) -> bool:
        """On the same device with the same preset (one space hash covers every device of a
        preset)."""
        mine = self.record_fields()
        return record.device == mine["device"] and record.preset == mine["preset"]

    def on_device(self, device: Mapping[str, Any]) -> TuningTarget:
        """This target measured on `device` (e.g. dask workers' DaskMeasurer.device): what its
        records carry and accept."""
        return GpuTuningTarget(self.api, self.preset, self._fields_on(device))

    def _fields_on(self, device: Mapping[str, Any]) -> dict[str, Any]:
        from autotune.measure.gpu_runner import L2_POLICY

        return {"device": dict(device), "preset": self.record_preset, "l2_policy": L2_POLICY}

    def describe(self) -> str:
        return f"{self.record_fields()['device'].get('name', self.api)} ({self.preset})"


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
    return CpuTuningTarget(threads) if api == CPU else GpuTuningTarget(api, preset)


__all__ = [
    "CPU",
    "GPU_APIS",
    "CpuTuningTarget",
    "GpuTuningTarget",
    "TuningTarget",
    "tuning_target",
]
