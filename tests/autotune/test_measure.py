"""Measurement: correct candidates are timed; crashes, hangs, wrong results and compile errors
are recorded with their kind and the next candidate still measures."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from autotune.measure import Runner, build, kernel_signature, measure
from autotune.task import Task

M, K, N = 16, 24, 32
BODY = """
  ^bb0(%in0: f32, %in1: f32, %acc0: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.{combine} %acc0, %p : f32
    linalg.yield %s : f32
"""


def matmul_ir(combine: str = "addf") -> str:
    a, b, c = f"memref<{M}x{K}xf32>", f"memref<{K}x{N}xf32>", f"memref<{M}x{N}xf32>"
    return f"""
func.func @kernel(%a: {a}, %b: {b}, %c: {c}) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : {c})
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%a, %b : {a}, {b}) outs(%c : {c}) {{{BODY.format(combine=combine)}  }}
  func.return
}}"""


# stores 4 TiB past the output buffer: SIGSEGV
SEGFAULT_IR = f"""
func.func @kernel(%a: memref<{M}x{K}xf32>, %b: memref<{K}x{N}xf32>, %c: memref<{M}x{N}xf32>) {{
  %one = arith.constant 1.0 : f32
  %far = arith.constant 1099511627776 : index
  %r = memref.reinterpret_cast %c to offset: [0], sizes: [1099511627777], strides: [1] : memref<{M}x{N}xf32> to memref<1099511627777xf32>
  memref.store %one, %r[%far] : memref<1099511627777xf32>
  func.return
}}"""

# 2^62 dependent float additions: never ends
HANG_IR = f"""
func.func @kernel(%a: memref<{M}x{K}xf32>, %b: memref<{K}x{N}xf32>, %c: memref<{M}x{N}xf32>) {{
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 4611686018427387904 : index
  %s = scf.for %i = %c0 to %big step %c1 iter_args(%acc = %one) -> (f32) {{
    %n = arith.addf %acc, %one : f32
    scf.yield %n : f32
  }}
  memref.store %s, %c[%c0, %c0] : memref<{M}x{N}xf32>
  func.return
}}"""

TASK = Task(
    workload_key="test-measure-matmul-16x24x32",
    kernel_ir=matmul_ir(),
    weight=1,
    flops=2.0 * M * N * K,
    name="matmul 16x24x32",
    anchor=0,
)
SCHEDULED = [
    "default-schedule",
    "tile{sizes=4,16,8 op=0}",
    "interchange{order=0,2,1 op=0}",
    "vectorize{dim=1 width=8 op=0}",
    "unroll-jam{factors=2,8,1 op=0}",
]


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    r = Runner()
    yield r
    r.stop()


def test_build_gives_object_code_and_signature() -> None:
    obj = build(TASK, ["default-schedule"])
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF"
    assert kernel_signature(TASK.kernel_ir) == [
        ((M, K), "float32"),
        ((K, N), "float32"),
        ((M, N), "float32"),
    ]


def test_correct_candidates_are_timed_in_one_runner(runner: Runner) -> None:
    results = measure(TASK, [[], ["default-schedule"], SCHEDULED], repeat=3, runner=runner)
    pid = runner.pid
    for r in results:
        assert r.error_kind is None, r.error
        assert len(r.costs) == 3 and all(c > 0 for c in r.costs)
        assert 0 < r.min_s <= r.median_s < 0.1
        assert r.build_s > 0
    measure(TASK, [SCHEDULED], repeat=1, runner=runner)
    assert runner.pid == pid  # nothing crashed: the runner was reused


def test_segfault_is_a_runtime_error_and_the_next_candidate_measures(runner: Runner) -> None:
    results = measure(
        TASK, [[], [], SCHEDULED], repeat=2, kernel_irs=[None, SEGFAULT_IR, None], runner=runner
    )
    assert [r.error_kind for r in results] == [None, "runtime_error", None], results
    assert "SIGSEGV" in results[1].error or "SIGBUS" in results[1].error
    assert results[2].costs and min(results[2].costs) > 0


def test_hang_is_a_timeout_within_the_limit(runner: Runner) -> None:
    measure(TASK, [[]], repeat=1, runner=runner)  # reference and runner ready
    t0 = time.perf_counter()
    results = measure(
        TASK, [[], SCHEDULED], repeat=1, timeout_s=1.5, kernel_irs=[HANG_IR, None], runner=runner
    )
    elapsed = time.perf_counter() - t0
    assert results[0].error_kind == "timeout", results[0]
    assert results[1].error_kind is None, results[1].error
    # 1.5 s for the hang, then a restarted runner and the good candidate
    assert elapsed < 1.5 + 4.0, elapsed


def test_wrong_result_and_compile_error_are_recorded(runner: Runner) -> None:
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


def _task(key: str, kernel_ir: str = matmul_ir()) -> Task:
    return Task(workload_key=key, kernel_ir=kernel_ir, weight=1, flops=2.0 * M * N * K, name=key, anchor=0)


def _fails_as_reference_error(results: list, reason: str) -> None:
    for r in results:
        assert r.error_kind == "reference_error", r
        assert not r.ok and not r.costs
        assert reason in r.error, r.error


def test_a_crashing_reference_fails_every_candidate(runner: Runner) -> None:
    # the task's own kernel (its default schedule is the reference) segfaults; the candidates'
    # kernels are correct matmuls, but nothing can check them: none may count as correct
    task = _task("test-measure-reference-crash", SEGFAULT_IR)
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(task, [[], SCHEDULED], repeat=1, kernel_irs=[matmul_ir(), matmul_ir()], runner=runner)
    _fails_as_reference_error(results, "runtime_error: crashed")
    again = measure(task, [SCHEDULED], repeat=1, kernel_irs=[matmul_ir()], runner=runner)  # cached
    _fails_as_reference_error(again, "runtime_error: crashed")
    assert measure(TASK, [SCHEDULED], repeat=1, runner=runner)[0].ok  # other tasks still measure


def test_a_reference_that_does_not_compile_fails_every_candidate(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autotune.measure as measure_mod

    monkeypatch.setattr(measure_mod, "REFERENCE_PASSES", ["tile{sizes=4,4}"])
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(_task("test-measure-reference-compile-error"), [[], SCHEDULED, ["tile{sizes=1}"]], runner=runner)
    _fails_as_reference_error(results[:2], "compile_error: CompileError: pass 'tile' failed")
    assert results[2].error_kind == "compile_error"  # its own fault, said as such


def test_a_reference_that_hangs_fails_every_candidate(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import autotune.measure as measure_mod

    monkeypatch.setattr(measure_mod, "_START_TIMEOUT_S", 1.0)
    task = _task("test-measure-reference-hang", HANG_IR)
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(task, [[]], repeat=1, timeout_s=1.0, kernel_irs=[matmul_ir()], runner=runner)
    _fails_as_reference_error(results, "timeout")


def test_a_kernel_without_a_signature_is_a_reference_error_not_an_exception(runner: Runner) -> None:
    scalar_arg = matmul_ir().replace("func.func @kernel(%a", "func.func @kernel(%n: i32, %a")
    with pytest.warns(UserWarning, match="no reference output"):
        results = measure(_task("test-measure-reference-signature", scalar_arg), [[]], kernel_irs=[matmul_ir()], runner=runner)
    _fails_as_reference_error(results, "is not a memref")
