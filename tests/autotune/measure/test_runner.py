"""The CPU runner (autotune/measure/runner.py) on hand-written object files, without the builder:
outputs come back for a reference run, a check callback's verdict is a wrong_result that restarts
the process, crashes and missing kernels are results, and the inputs are the seeded ones."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from autotune.measure import (
    BuildResult,
    LocalRunner,
    RunInputs,
    RunSettings,
    random_inputs,
)
from compiler.backends.llvm_cpu import jit

N = 16
DOUBLE = f"""
define void @kernel(ptr %x, ptr %y) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr float, ptr %x, i64 %i
  %py = getelementptr float, ptr %y, i64 %i
  %v = load float, ptr %px
  %w = fmul float %v, 2.0
  store float %w, ptr %py
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, {N}
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""
CRASH = """
define void @kernel(ptr %x, ptr %y) {
  store volatile float 1.0, ptr null
  ret void
}
"""
NO_KERNEL = "define void @other(ptr %x, ptr %y) {\n  ret void\n}\n"
INPUTS = RunInputs("test-runner-double", [((N,), "float32"), ((N,), "float32")])
FAST = RunSettings(repeat=2, number=3, timeout_s=20.0)


def _build(text: str) -> BuildResult:
    tm = jit.target_machine()
    mod = jit.parse(text)
    jit.optimize(mod, tm)
    return BuildResult(jit.emit_object(mod, tm), "", 0.0)


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    r = LocalRunner()
    yield r
    r.stop()


def test_without_a_check_the_outputs_come_back(runner: LocalRunner) -> None:
    (run,) = runner.run(INPUTS, [_build(DOUBLE)], FAST)
    assert run.ok and len(run.costs) == 2 and all(c > 0 for c in run.costs)
    assert run.run_s > 0 and run.outputs is not None
    x, y = random_inputs(INPUTS.signature)  # what every runner calls a kernel with
    np.testing.assert_array_equal(run.outputs[0], x)
    np.testing.assert_array_equal(run.outputs[1], 2 * x)


def test_a_rejected_output_is_a_wrong_result_and_a_fresh_process(runner: LocalRunner) -> None:
    build = _build(DOUBLE)
    runner.run(INPUTS, [build], FAST)
    pid = runner.pid
    verdicts = iter(["", "argument 1: made up", ""])
    seen: list[list[np.ndarray]] = []

    def check(outputs: list[np.ndarray]) -> str:
        seen.append(outputs)
        return next(verdicts)

    runs = runner.run(INPUTS, [build, build, build], FAST, check)
    assert [r.error_kind for r in runs] == [None, "wrong_result", None]
    assert runs[1].error == "argument 1: made up" and runs[1].costs  # timed all the same
    assert all(r.outputs is None for r in runs)  # checked, not kept
    assert len(seen) == 3 and runner.pid not in (None, pid)


def test_crashes_and_missing_kernels_are_results(runner: LocalRunner) -> None:
    runs = runner.run(INPUTS, [_build(CRASH), _build(NO_KERNEL), _build(DOUBLE)], FAST)
    assert [r.error_kind for r in runs] == ["runtime_error", "runtime_error", None]
    assert "SIGSEGV" in runs[0].error or "SIGBUS" in runs[0].error
    assert not runs[0].costs and runs[0].run_s == 0.0
    assert "no function `kernel`" in runs[1].error


def test_a_build_without_an_artifact_is_not_run(runner: LocalRunner) -> None:
    with pytest.raises(ValueError, match="without an artifact"):
        runner.run(INPUTS, [BuildResult(None, "CompileError: no")], FAST)


SLOW = (
    DOUBLE.replace(f"icmp eq i64 %next, {N}", "icmp eq i64 %next, 8192")
    .replace("%i = phi", "%j = phi")
    .replace("%next = add i64 %i", "%next = add i64 %j")
    .replace("[ %next, %loop ]", "[ %next, %loop ]\n  %i = and i64 %j, 15")
    .replace("load float", "load volatile float")
    .replace("store float", "store volatile float")
)
"""DOUBLE 512 times over, with volatile accesses: a baseline much slower than DOUBLE."""


def test_a_baseline_is_timed_in_turns_with_the_candidates(runner: LocalRunner) -> None:
    paired = RunInputs(INPUTS.key, INPUTS.signature, _build(SLOW).artifact)
    settings = RunSettings(repeat=4, number=3, timeout_s=20.0)
    runs = runner.run(paired, [_build(DOUBLE), _build(CRASH), _build(DOUBLE)], settings)
    assert [r.error_kind for r in runs] == [None, "runtime_error", None]
    for r in (runs[0], runs[2]):  # after the crash, a fresh process loads the baseline again
        assert len(r.costs) == len(r.baseline_costs) == 4
        assert min(r.baseline_costs) > 4 * min(r.costs)  # the slow one is the baseline
        assert r.outputs is not None  # the candidate's outputs, not the baseline's
        np.testing.assert_array_equal(r.outputs[1], 2 * r.outputs[0])
    assert not runs[1].baseline_costs
    # then timed in turns with each other and the baseline: one baseline series for the batch
    assert runs[0].baseline_costs == runs[2].baseline_costs
    (alone,) = runner.run(INPUTS, [_build(DOUBLE)], settings)
    assert alone.ok and len(alone.costs) == 4 and alone.baseline_costs == []
