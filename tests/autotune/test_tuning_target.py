"""The typed tuner seams: TuningTarget's CPU and GPU implementations, the Measurer the tuning
loop is given, and the KnobSpace base both search spaces extend."""

from __future__ import annotations

import dataclasses

import pytest

import autotune.measure as measure_module
from autotune.gpu_space import GpuSearchSpace
from autotune.knob_space import KnobSpace
from autotune.measure import LocalMeasurer, MeasureResult
from autotune.record import TuningRecord, Workload, config_key
from autotune.space import SearchSpace
from autotune.tuning_target import CpuTuningTarget, GpuTuningTarget, tuning_target
from tests.autotune.test_gpu_space import info_of

DEVICE = {"name": "a test GPU", "driver_version": "1"}


def record(**over: object) -> TuningRecord:
    r = TuningRecord.new(Workload("wk", "t", 1e6), "h", {"tile": [1]}, [], [1e-3])
    return dataclasses.replace(r, **over)  # type: ignore[arg-type]


def test_tuning_target_builds_the_implementation_of_its_api() -> None:
    assert tuning_target("cpu", threads=2) == CpuTuningTarget(2)
    gpu = tuning_target("opencl")
    assert isinstance(gpu, GpuTuningTarget) and gpu.threads == 1
    assert gpu.record_preset == "opencl-cpu" and gpu.preset is None
    with pytest.raises(ValueError, match="unknown tuning target"):
        tuning_target("tpu")


def test_cpu_target() -> None:
    cpu = CpuTuningTarget(2)
    assert cpu.api == "cpu" and cpu.record_preset is None and cpu.pairs_baselines
    space = cpu.space(info_of("matmul"))
    assert isinstance(space, SearchSpace) and isinstance(space, KnobSpace) and space.threads == 2
    measurer = cpu.measurer()
    assert isinstance(measurer, LocalMeasurer) and not measurer.remote
    assert dict(measurer.measure_kwargs) == {"threads": 2} == cpu.remote_measure_kwargs()
    r = record()
    assert cpu.stamp(r) is r and cpu.accepts(r)
    assert cpu.describe() == "2 thread(s)"
    with pytest.raises(ValueError, match="no device"):
        cpu.on_device(DEVICE)


def test_gpu_target_stamps_and_accepts_the_records_of_its_device() -> None:
    gpu = GpuTuningTarget("opencl", "opencl-cpu").on_device(DEVICE)
    assert not gpu.pairs_baselines
    assert gpu.remote_measure_kwargs() == {"target": "opencl", "preset": "opencl-cpu"}
    assert isinstance(gpu.space(info_of("matmul")), GpuSearchSpace)
    stamped = gpu.stamp(record())
    assert stamped.device == DEVICE and stamped.preset == "opencl-cpu" and stamped.l2_policy
    assert gpu.accepts(stamped)
    assert not gpu.accepts(record(device={"name": "another"}, preset="opencl-cpu"))
    assert not gpu.accepts(record())  # a CPU record
    assert gpu.describe() == "a test GPU (opencl-cpu)"
    on_json = stamped.to_json()
    assert {k: on_json[k] for k in ("device", "preset")} == {
        "device": DEVICE,
        "preset": "opencl-cpu",
    }


def test_local_measurer_looks_measure_up_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake(task, candidates, **kwargs):
        calls.append((candidates, kwargs))
        return [MeasureResult([1e-3]) for _ in candidates]

    measurer = CpuTuningTarget(1).measurer()
    monkeypatch.setattr(measure_module, "measure", fake)
    (result,) = measurer(None, [["tile{sizes=1}"]])  # type: ignore[arg-type]
    assert result.ok and calls == [([["tile{sizes=1}"]], {"threads": 1})]


def test_both_spaces_key_configs_as_the_database_does() -> None:
    cpu = SearchSpace(info_of("matmul"), width=16)
    gpu = GpuSearchSpace(info_of("matmul"), tuning_target("cuda").space(info_of("matmul")).target)
    for space in (cpu, gpu):
        c = space.default_config()
        assert space.key(c) == config_key(c) == record(config=c).config_key
