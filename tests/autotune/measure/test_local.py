"""autotune/measure/local.py: measuring candidates.

`measure` on the CPU, with the local builder and runner: correct candidates are timed; crashes,
hangs, wrong results and compile errors are recorded with their kind and the next candidate still
measures; when the reference itself fails, no candidate counts as correct.

`measure_with`, the composition, with a builder and a runner other than the local ones, as a GPU
target would bring: the checker and the composition are used as they are, the reference is built
with the first batch, and every failure becomes the right MeasureResult.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from autotune.measure import (
    BuildInput,
    BuildResult,
    Check,
    LocalRunner,
    Reference,
    ReferenceChecker,
    RunInputs,
    RunResult,
    RunSettings,
    checker,
    measure,
    measure_with,
    random_inputs,
)
from autotune.task import Task
from tests.support.measure_kernels import (
    HANG_IR,
    SCHEDULED,
    SEGFAULT_IR,
    TASK,
    matmul_ir,
    matmul_task,
)

KERNEL_IR = """
func.func @kernel(%x: memref<16xf32>, %y: memref<16xf32>) {
  func.return
}"""


def _task(key: str) -> Task:
    return Task(workload_key=key, kernel_ir=KERNEL_IR, weight=1, flops=32.0, name=key, anchor=0)


class FakeBuilder:
    """'Compiles' the first pass of a candidate to an artifact naming what its kernel does."""

    def __init__(self) -> None:
        self.batches: list[list[list[str]]] = []

    def build(self, inputs: Sequence[BuildInput]) -> list[BuildResult]:
        self.batches.append([i.passes for i in inputs])
        out = []
        for i in inputs:
            what = i.passes[0] if i.passes else "double"
            if what == "default-schedule":
                what = "double"
            if what == "broken":
                out.append(BuildResult(None, "CompileError: broken", 0.5))
            else:
                out.append(BuildResult(what.encode(), "", 0.5))
        return out


class FakeRunner:
    """A runner as a device runner would be: computes outputs on the 'device' (numpy here)."""

    def __init__(self, reference_fails: bool = False) -> None:
        self.reference_fails = reference_fails
        self.resets = 0

    def run(
        self,
        inputs: RunInputs,
        builds: Sequence[BuildResult],
        settings: RunSettings,
        check: Check | None = None,
    ) -> list[RunResult]:
        out = []
        for b in builds:
            assert b.artifact is not None
            what = b.artifact.decode()
            if what == "crash" or (check is None and self.reference_fails):
                out.append(RunResult(error_kind="runtime_error", error="device lost"))
                continue
            x, y = random_inputs(inputs.signature)
            y[...] = x * (3 if what == "wrong" else 2)
            costs = [1e-3] * settings.repeat
            if check is None:
                out.append(RunResult(costs, [x, y], None, "", 0.25))
            elif why := check([x, y]):
                self.resets += 1
                out.append(RunResult(costs, None, "wrong_result", why, 0.25))
            else:
                out.append(RunResult(costs, None, None, "", 0.25))
        return out

    def stop(self) -> None:
        pass


SETTINGS = RunSettings(repeat=2, number=1, timeout_s=5.0)


def test_another_builder_and_runner_plug_into_the_composition() -> None:
    builder, runner, checker = FakeBuilder(), FakeRunner(), ReferenceChecker()
    task = _task("test-local-plug")
    cands = [["double"], ["broken"], ["wrong"], ["crash"]]
    results = measure_with(builder, runner, checker, task, cands, "gpu", SETTINGS)
    assert [r.error_kind for r in results] == [
        None,
        "compile_error",
        "wrong_result",
        "runtime_error",
    ]
    assert results[0].costs == [1e-3, 1e-3] and results[0].run_s == 0.25
    assert results[0].build_s == 0.5 and results[1].error == "CompileError: broken"
    assert "argument 1" in results[2].error and results[2].costs and runner.resets == 1
    assert results[3].error == "device lost" and not results[3].costs
    assert builder.batches[0][-1] == ["default-schedule"]  # the reference, with the first batch

    ref = checker.reference(task, "gpu")
    assert ref is not None and ref.outputs is not None
    assert ref.signature == [((16,), "float32"), ((16,), "float32")]
    again = measure_with(builder, runner, checker, task, [["double"]], "gpu", SETTINGS)
    assert again[0].ok and builder.batches[1] == [["double"]]  # kept: not built again
    assert checker.reference(task, "cpu") is None  # one reference per target


def test_a_failed_reference_fails_every_candidate_once_warned() -> None:
    builder, checker = FakeBuilder(), ReferenceChecker()
    task = _task("test-local-reference-fails")
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure_with(
            builder, FakeRunner(True), checker, task, [["double"], ["broken"]], "gpu", SETTINGS
        )
    assert [r.error_kind for r in results] == ["reference_error", "compile_error"]
    assert "runtime_error: device lost" in results[0].error


def test_kernel_irs_must_match_the_candidates() -> None:
    with pytest.raises(ValueError, match="one entry per candidate"):
        measure_with(
            FakeBuilder(),
            FakeRunner(),
            ReferenceChecker(),
            _task("test-local-irs"),
            [["double"]],
            "gpu",
            SETTINGS,
            kernel_irs=[None, None],
        )


def test_the_checker_compares_within_tolerance_and_skips_private_arguments() -> None:
    checker = ReferenceChecker()
    ref = Reference([((4,), "float32")] * 2, [np.ones(4, np.float32), np.full(4, 100, np.int64)])
    ok: list[np.ndarray] = [np.ones(4, np.float32) * (1 + 1e-6), np.full(4, 100, np.int64)]
    assert checker.check(ok, ref, 1e-4, 1e-5) == ""
    off: list[np.ndarray] = [np.ones(4, np.float32) * 1.1, np.full(4, 100, np.int64)]
    assert "4/4 elements differ" in checker.check(off, ref, 1e-4, 1e-5)
    ints: list[np.ndarray] = [np.ones(4, np.float32), np.full(4, 99, np.int64)]
    assert checker.check(ints, ref, 1e-4, 1e-5) == "argument 1: differs from the reference"
    skipped = Reference(ref.signature, ref.outputs, "", frozenset({1}))
    assert checker.check(ints, skipped, 1e-4, 1e-5) == ""
    assert "no reference" in checker.check(ok, Reference([], None, "why"), 1e-4, 1e-5)


# -- measure() with the local builder and runner -------------------------------------------------


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    r = LocalRunner()
    yield r
    r.stop()


def test_correct_candidates_are_timed_in_one_runner(runner: LocalRunner) -> None:
    results = measure(TASK, [[], ["default-schedule"], SCHEDULED], repeat=3, runner=runner)
    pid = runner.pid
    for r in results:
        assert r.error_kind is None, r.error
        assert len(r.costs) == 3 and all(c > 0 for c in r.costs)
        assert 0 < r.min_s <= r.median_s
        assert r.build_s > 0
    measure(TASK, [SCHEDULED], repeat=1, runner=runner)
    assert runner.pid == pid  # nothing crashed: the runner was reused


def test_candidates_are_timed_beside_the_default_schedule(runner: LocalRunner) -> None:
    default, scheduled = measure(TASK, [["default-schedule"], SCHEDULED], repeat=5, runner=runner)
    for r in (default, scheduled):
        assert r.ok and len(r.baseline_costs) == len(r.costs) == 5
        assert all(c > 0 and math.isfinite(c) for c in r.costs + r.baseline_costs)
    # (how close the default's costs are to its own baseline's is a figure, not a test: a busy
    # host can slow either round; tests/bench/bench_thread_noise.py measures it)
    (alone,) = measure(TASK, [SCHEDULED], repeat=2, runner=runner, paired=False)
    assert alone.ok and len(alone.costs) == 2 and alone.baseline_costs == []


def test_a_threaded_candidate_is_timed_beside_the_threaded_default(runner: LocalRunner) -> None:
    """At two threads the reference (and baseline) is the two-thread default schedule: a
    candidate is compared with what the model would otherwise run, not the serial default."""
    assert checker.DEFAULT_CHECKER.reference_input(TASK, 2).passes == [
        "default-schedule{threads=2}"
    ]
    assert checker.DEFAULT_CHECKER.reference_input(TASK).passes == ["default-schedule"]
    (same,) = measure(TASK, [["default-schedule{threads=2}"]], repeat=5, runner=runner, threads=2)
    assert same.ok and len(same.baseline_costs) == 5
    assert all(c > 0 and math.isfinite(c) for c in same.costs + same.baseline_costs)
    assert checker.DEFAULT_CHECKER.reference(TASK, "cpu", 2) is not None


def test_segfault_is_a_runtime_error_and_the_next_candidate_measures(runner: LocalRunner) -> None:
    results = measure(
        TASK, [[], [], SCHEDULED], repeat=2, kernel_irs=[None, SEGFAULT_IR, None], runner=runner
    )
    assert [r.error_kind for r in results] == [None, "runtime_error", None], results
    assert "SIGSEGV" in results[1].error or "SIGBUS" in results[1].error
    assert results[2].costs and min(results[2].costs) > 0


def test_hang_is_a_timeout_within_the_limit(runner: LocalRunner) -> None:
    measure(TASK, [[]], repeat=1, runner=runner)  # reference and runner ready
    results = measure(
        TASK, [[], SCHEDULED], repeat=1, timeout_s=1.5, kernel_irs=[HANG_IR, None], runner=runner
    )
    # the hang is cut at its limit (the message says which), then a restarted runner goes on
    assert results[0].error_kind == "timeout", results[0]
    assert "1.5 s" in results[0].error, results[0].error
    assert results[1].error_kind is None, results[1].error


def test_wrong_result_and_compile_error_are_recorded(runner: LocalRunner) -> None:
    results = measure(
        TASK,
        [SCHEDULED, ["tile{sizes=4,4}"], []],
        repeat=1,
        kernel_irs=[matmul_ir(combine="subf"), None, None],
        runner=runner,
    )
    assert results[0].error_kind == "wrong_result", results[0]
    assert "differ from the reference" in results[0].error
    assert results[1].error_kind == "compile_error"
    assert "expected 3 tile sizes" in results[1].error
    assert results[2].error_kind is None, results[2].error


def _fails_as_reference_error(results: list, reason: str) -> None:
    for r in results:
        assert r.error_kind == "reference_error", r
        assert not r.ok and not r.costs
        assert reason in r.error, r.error


def test_a_crashing_reference_fails_every_candidate(runner: LocalRunner) -> None:
    # the task's own kernel (its default schedule is the reference) segfaults; the candidates'
    # kernels are correct matmuls, but nothing can check them: none may count as correct
    task = matmul_task("test-measure-reference-crash", SEGFAULT_IR)
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(
            task, [[], SCHEDULED], repeat=1, kernel_irs=[matmul_ir(), matmul_ir()], runner=runner
        )
    _fails_as_reference_error(results, "runtime_error: crashed")
    again = measure(task, [SCHEDULED], repeat=1, kernel_irs=[matmul_ir()], runner=runner)  # cached
    _fails_as_reference_error(again, "runtime_error: crashed")
    assert measure(TASK, [SCHEDULED], repeat=1, runner=runner)[0].ok  # other tasks still measure


def test_a_reference_that_does_not_compile_fails_every_candidate(
    runner: LocalRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checker, "REFERENCE_PASSES", ["tile{sizes=4,4}"])
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(
            matmul_task("test-measure-reference-compile-error"),
            [[], SCHEDULED, ["tile{sizes=1}"]],
            runner=runner,
        )
    _fails_as_reference_error(results[:2], "compile_error: CompileError: pass 'tile' failed")
    assert results[2].error_kind == "compile_error"  # its own fault, said as such


def test_a_reference_that_hangs_fails_every_candidate(
    runner: LocalRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checker, "REFERENCE_TIMEOUT_S", 1.0)
    task = matmul_task("test-measure-reference-hang", HANG_IR)
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(
            task, [[]], repeat=1, timeout_s=1.0, kernel_irs=[matmul_ir()], runner=runner
        )
    _fails_as_reference_error(results, "timeout")


def test_a_kernel_without_a_signature_is_a_reference_error_not_an_exception(
    runner: LocalRunner,
) -> None:
    scalar_arg = matmul_ir().replace("func.func @kernel(%a", "func.func @kernel(%n: i32, %a")
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(
            matmul_task("test-measure-reference-signature", scalar_arg),
            [[]],
            kernel_irs=[matmul_ir()],
            runner=runner,
        )
    _fails_as_reference_error(results, "is not a memref")
