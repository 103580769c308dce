"""`default-schedule` (passes/transforms/default_schedule.py): the analytic default schedule
(passes/schedule/default.py) attached to every kernel that has none.

Kernels that already carry a schedule keep it; with `threads` > 1 large kernels also get their
outer loops run across threads. The default schedules of matmul, conv, broadcast and reduction
kernels lower to vector code that computes what numpy does. Out-of-range options are one error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

from compiler.pass_runner import make_context, run_passes
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.default import default_schedule, parallel_schedule
from tests.support import schedule_kernels
from tests.support.schedule_options import (
    HUGE,
    SCHEDULED,
    assert_one_option_error,
    assert_rejected_without_kernels,
)
from tests.support.scheduled_kernels import (
    bias_relu_src,
    conv_reference,
    conv_src,
    loops_ir,
    matmul_src,
    rowmax_src,
    run_kernel,
    scheduled,
)

RNG = np.random.default_rng(17)


def test_attaches_the_analytic_default_to_every_kernel_without_one() -> None:
    src = schedule_kernels.matmul(64, 128, 64) + schedule_kernels.RELU + schedule_kernels.ADD
    ctx = make_context()
    module = Parser(ctx, src).parse_module()
    kernels = [op for op in module.walk() if isinstance(op, GenericOp)]
    assert len(kernels) == 3 and not any(SCHEDULE_ATTR_NAME in op.attributes for op in kernels)
    expected = [default_schedule(analyze_kernel(op), 8) for op in kernels]
    run_passes(ctx, module, ["default-schedule{width=8}"])
    assert scheduled(str(module), []) == expected
    assert all(s.width == 8 for s in expected if s.vector >= 0)


def test_a_kernel_with_a_schedule_keeps_it() -> None:
    src = schedule_kernels.matmul(schedule=SCHEDULED) + schedule_kernels.RELU
    matmul, relu = scheduled(src, ["default-schedule{width=8}"])
    assert (matmul.unroll, matmul.vector, matmul.width) == ((8, 32, 1), 1, 16)
    (relu_kernel,) = schedule_kernels.generics(schedule_kernels.parse(schedule_kernels.RELU))
    assert relu == default_schedule(analyze_kernel(relu_kernel), 8)


def test_threads_run_the_outer_loops_of_large_kernels_in_parallel() -> None:
    big, small = matmul_src(64, 64, 64), matmul_src(8, 8, 8)
    for src in (big, small):
        ctx = make_context()
        (op,) = [g for g in Parser(ctx, src).parse_module().walk() if isinstance(g, GenericOp)]
        info = analyze_kernel(op)
        expected = parallel_schedule(default_schedule(info, 8), info, 2)
        assert scheduled(src, ["default-schedule{width=8 threads=2}"]) == [expected]
    (one,) = scheduled(big, ["default-schedule{width=8}"])
    (two,) = scheduled(big, ["default-schedule{width=8 threads=2}"])
    assert one.parallel == 0 and two.parallel >= 1
    (tiny,) = scheduled(small, ["default-schedule{width=8 threads=2}"])
    assert tiny.parallel == 0  # below the parallel threshold: not worth a thread


def test_default_schedule_vectorizes_matmul_with_register_tile() -> None:
    text = loops_ir(matmul_src(64, 64, 64), ["default-schedule"])
    assert "vector.fma" in text and "iter_args" in text
    # the B row is loaded once per k step and reused by every row of the register tile
    assert text.count("vector.load %b") == 2


def test_default_schedules_match_numpy() -> None:
    a = RNG.standard_normal((13, 21)).astype(np.float32)
    b = RNG.standard_normal((21, 37)).astype(np.float32)
    got = run_kernel(matmul_src(13, 21, 37), ["default-schedule{width=8}"], [a, b], (13, 37))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-5)
    x = RNG.standard_normal((1, 5, 11, 11)).astype(np.float32)
    w = RNG.standard_normal((5, 3, 3, 24)).astype(np.float32)
    ref = conv_reference(x, w, 2)
    got = run_kernel(conv_src(5, 11, 24, 3, 2), ["default-schedule"], [x, w], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    y = RNG.standard_normal((7, 45)).astype(np.float32)
    bias = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(bias_relu_src(7, 45), ["default-schedule"], [y, bias], (7, 45))
    np.testing.assert_allclose(got, np.maximum(y + bias, 0), rtol=1e-6)
    got = run_kernel(rowmax_src(7, 45), ["default-schedule"], [y], (7,))
    np.testing.assert_array_equal(got, y.max(axis=1))


def test_parallel_default_schedule_matches_numpy(threads: int) -> None:
    a = RNG.standard_normal((64, 48)).astype(np.float32)
    b = RNG.standard_normal((48, 64)).astype(np.float32)
    passes = ["default-schedule{width=8 threads=2}"]
    assert "scf.parallel" in loops_ir(matmul_src(64, 48, 64), passes)
    got = run_kernel(matmul_src(64, 48, 64), passes, [a, b], (64, 64))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


BAD = [
    (
        "default-schedule{threads=0}",
        "default-schedule: option 'threads': 0 is out of range; allowed: 1..1024",
    ),
    (
        f"default-schedule{{threads={HUGE}}}",
        f"default-schedule: option 'threads': {HUGE} is out of range; allowed: 1..1024",
    ),
    (
        "default-schedule{width=-1}",
        "default-schedule: option 'width': -1 is out of range; allowed: 1..64",
    ),
    (
        "default-schedule{width=65}",
        "default-schedule: option 'width': 65 is out of range; allowed: 1..64",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)


def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_rejected_without_kernels(capsys, tmp_path, "default-schedule{threads=0}")
