"""Measuring candidates on a GPU target (autotune/measure/gpu_*.py) with the tasks of a small
ONNX model: OpenCL for real on PoCL (skipped where OpenCL cannot run), CUDA built and checked by
nvcc here and run only where a CUDA device is.

The default GPU schedule, a SIMT tile + register tile and a split reduction measure on both
OpenCL presets against the CPU's reference; an illegal schedule is a compile_error naming its
rule; a wrong output, a hung kernel and a crashing kernel are results after which the runner
starts afresh and the next candidate measures; the device is described for the records.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator

import numpy as np
import pytest
from onnx import TensorProto, helper

from autotune.measure import (
    DEFAULT_CHECKER,
    L2_POLICY,
    BuildInput,
    BuildResult,
    GpuBuilder,
    GpuRunner,
    RunInputs,
    RunSettings,
    device_info,
    kernel_signature,
    measure,
)
from autotune.measure.gpu_measure import CpuReferenceChecker
from autotune.task import Task, extract_tasks
from compiler.backends.gpu.compile import unavailable_reason
from compiler.backends.gpu.cuda_check import nvcc_path
from tests.support.references import graph_model

OPENCL = unavailable_reason("opencl")
CUDA = unavailable_reason("cuda")
needs_opencl = pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
PRESETS = ["opencl-cpu", "opencl-gpu"]

SIMT = [  # 8x16 block tiles of 4x4 register tiles (8 threads), staging depth 8
    "default-schedule{target=opencl-gpu}",
    "tile{sizes=8,16,8 op=0}",
    "unroll-jam{factors=4,4,1 op=0}",
]
SPLIT = ["split-reduction{threads=4 op=0}"]  # 4 threads share each row's sum
TOO_MANY_THREADS = [  # one block of 16x32 threads, 4 per output: 2048
    "split-reduction{threads=4 op=0}",
    "tile{sizes=16,32,0 op=0}",
    "unroll-jam{factors=1,1,1 op=0}",
]
FAST = RunSettings(repeat=2, number=0, timeout_s=10.0)


@functools.cache
def tasks() -> tuple[Task, Task]:
    """relu(x @ w) (a matmul with a fused epilogue) and its row sums (a reduction)."""
    f = TensorProto.FLOAT
    w = np.random.default_rng(0).standard_normal((48, 32)).astype(np.float32)
    model = graph_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("ReduceSum", ["r"], ["y"], axes=[1], keepdims=0),
        ],
        [("x", f, [16, 48])],
        [("y", f)],
        [("w", w)],
        opset=11,
    )
    found = {t.name.split(" (")[0]: t for t in extract_tasks(model)}
    return found["matmul 16x32 k48"], found["reduce 16 r32"]


@pytest.fixture(scope="module")
def runner() -> Iterator[GpuRunner]:
    r = GpuRunner("opencl")
    yield r
    r.stop()


def _build(task: Task, passes: list[str], preset: str = "opencl-cpu") -> BuildResult:
    (b,) = GpuBuilder(preset, workers=1).build([BuildInput(task, passes)])
    assert b.ok, b.error
    return b


def _with_source(build: BuildResult, inject: str) -> BuildResult:
    """`build` with C statements put first in its (first) kernel's body."""
    assert build.artifact is not None
    doc = json.loads(build.artifact)
    assert ")\n{\n" in doc["source"]
    doc["source"] = doc["source"].replace(")\n{\n", ")\n{\n    " + inject + "\n", 1)
    return BuildResult(json.dumps(doc).encode(), "", 0.0)


def _inputs(task: Task) -> RunInputs:
    return RunInputs(task.workload_key, kernel_signature(task.kernel_ir))


@needs_opencl
@pytest.mark.parametrize("preset", PRESETS)
def test_default_simt_and_split_schedules_measure(preset: str, runner: GpuRunner) -> None:
    matmul, rows = tasks()
    for task, schedule in ((matmul, SIMT), (rows, SPLIT)):
        results = measure(
            task, [[], schedule], target="opencl", preset=preset, repeat=3, runner=runner
        )
        for r in results:
            assert r.ok, r.error
            assert len(r.costs) == 3 and all(0 < c < 0.1 for c in r.costs)
            assert r.build_s > 0 and r.run_s > 0
        # the reference is the CPU's (the one a CPU tune checks against), none made on OpenCL
        assert DEFAULT_CHECKER.reference(task, "cpu") is not None
        assert DEFAULT_CHECKER.reference(task, "opencl") is None


@needs_opencl
def test_the_artifact_names_kernels_launches_and_arguments(runner: GpuRunner) -> None:
    matmul, _ = tasks()
    build = _build(matmul, SIMT, "opencl-gpu")
    assert build.artifact is not None
    doc = json.loads(build.artifact)
    assert (doc["api"], doc["preset"], doc["format"]) == ("opencl", "opencl-gpu", 1)
    assert [tuple(a) for a in doc["arguments"]] == [
        (list(s), d) for s, d in kernel_signature(matmul.kernel_ir)
    ]
    # the relu (scheduled by default-schedule, so not fused) runs after the matmul: two kernels
    relu, mm = doc["launches"]
    assert [relu["kernel"], mm["kernel"]] == ["candidate_0", "candidate_1"]
    assert "__kernel void candidate_1(" in doc["source"]
    assert (mm["grid"], mm["block"]) == ([4, 1, 1], [8, 1, 1])  # 16x32 / 8x16, 8x16 / 4x4
    assert (relu["grid"], relu["block"]) == ([2, 1, 1], [256, 1, 1])
    assert mm["args"] == [["argument", i, 0] for i in range(3)]  # @main's = the kernel's
    # without a check the arguments come back: the CPU reference's values
    (run,) = runner.run(_inputs(matmul), [build], FAST)
    reference = CpuReferenceChecker().prepare(matmul)  # made by an earlier test, or now
    assert run.ok and run.outputs is not None and reference is not None, run.error
    assert reference.outputs is not None
    for got, want in zip(run.outputs, reference.outputs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_opencl
def test_an_illegal_schedule_is_a_compile_error_naming_the_rule(runner: GpuRunner) -> None:
    matmul, _ = tasks()
    (r,) = measure(matmul, [TOO_MANY_THREADS], target="opencl", preset="opencl-gpu", runner=runner)
    assert r.error_kind == "compile_error"
    assert "convert-linalg-to-gpu" in r.error
    assert "2048 threads per block; opencl-gpu allows 1024" in r.error


@needs_opencl
def test_a_wrong_result_restarts_the_runner_and_the_next_candidate_measures(
    runner: GpuRunner,
) -> None:
    matmul, _ = tasks()
    broken = matmul.kernel_ir.replace("0.000000e+00", "1.000000e+00", 1)  # the fill: c = 1
    assert broken != matmul.kernel_ir
    measure(matmul, [[]], target="opencl", repeat=1, runner=runner)  # runner started
    pid = runner.pid
    results = measure(
        matmul, [SIMT, SIMT], target="opencl", repeat=2, kernel_irs=[broken, None], runner=runner
    )
    assert results[0].error_kind == "wrong_result", results[0]
    assert "differ from the reference" in results[0].error and results[0].costs
    assert results[1].ok, results[1].error
    assert runner.pid is not None and runner.pid != pid


@needs_opencl
def test_a_hung_kernel_is_a_timeout_and_a_fresh_runner_goes_on(runner: GpuRunner) -> None:
    _, rows = tasks()
    good = _build(rows, SPLIT)
    hang = _with_source(good, "volatile int spin = 1; while (spin) {}")
    runner.run(_inputs(rows), [good], FAST)  # the runner is up, the kernel compiled
    hung, after = runner.run(_inputs(rows), [hang, good], RunSettings(1, 0, timeout_s=2.0))
    assert hung.error_kind == "timeout" and "no answer within 2 s" in hung.error
    assert after.ok, after.error  # a fresh runner measured the next one


@needs_opencl
def test_a_crashing_kernel_is_a_runtime_error(runner: GpuRunner) -> None:
    _, rows = tasks()
    good = _build(rows, SPLIT)
    crash = _with_source(good, "((__global char*)arg0_buf)[(ulong)1 << 42] = 1;")  # 4 TiB out
    crashed, after = runner.run(_inputs(rows), [crash, good], FAST)
    assert crashed.error_kind == "runtime_error", crashed
    assert "crashed: killed by SIGSEGV" in crashed.error or "SIGBUS" in crashed.error
    assert after.ok, after.error


@needs_opencl
def test_the_device_is_described_for_the_records() -> None:
    from compiler.backends.gpu.opencl_runtime import select_device

    info = device_info("opencl")
    assert info["name"] == select_device().name.strip()  # PoCL's pthread device here
    assert info["vendor"] and info["driver_version"] and info["max_work_group_size"] >= 1
    assert info["opencl_version"].startswith("OpenCL ")
    assert json.loads(json.dumps(info)) == info  # stored in, and compared with, JSON records
    assert L2_POLICY == "warm"


@needs_nvcc
def test_cuda_candidates_are_checked_by_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    matmul, rows = tasks()
    builder = GpuBuilder("cuda", workers=2)
    built = builder.build([BuildInput(matmul, []), BuildInput(rows, SPLIT)])
    for b in built:
        assert b.ok and b.artifact is not None, b.error
        doc = json.loads(b.artifact)
        assert doc["api"] == "cuda" and 'extern "C" __global__ void candidate' in doc["source"]
    import compiler.backends.gpu.compile as gpu_compile

    source = gpu_compile.kernel_source
    monkeypatch.setattr(
        gpu_compile, "kernel_source", lambda m, api: source(m, api).replace("v0", "v0 +* ", 1)
    )
    (broken,) = GpuBuilder("cuda", workers=1).build([BuildInput(matmul, [])])
    assert not broken.ok and "nvcc -ptx -arch=sm_90 failed" in broken.error


@pytest.mark.skipif(CUDA is None, reason="CUDA runs here")
def test_without_cuda_a_run_names_the_reason() -> None:
    matmul, _ = tasks()
    cuda = GpuRunner("cuda")
    try:
        fake = BuildResult(b"{}", "", 0.0)
        (r,) = cuda.run(_inputs(matmul), [fake], FAST)
    finally:
        cuda.stop()
    assert r.error_kind == "runtime_error" and str(CUDA) in r.error


@pytest.mark.skipif(CUDA is not None, reason=f"CUDA: {CUDA}")
def test_cuda_candidates_measure() -> None:
    matmul, rows = tasks()
    gpu_simt = ["default-schedule{target=cuda}", *SIMT[1:]]
    for task, schedule in ((matmul, gpu_simt), (rows, SPLIT)):
        for r in measure(task, [[], schedule], target="cuda", repeat=3):
            assert r.ok, r.error
            assert len(r.costs) == 3 and all(0 < c < 0.1 for c in r.costs)
    assert device_info("cuda")["compute_capability"]
