"""`parallelize{loops=N}` (passes/transforms/parallelize.py): the outermost N tile loops of a
kernel run across threads.

The pass edits only the `parallel` field of the schedules it targets. convert-linalg-to-loops
makes the full cache tiles of those loops one collapsed `scf.parallel` (a loop with a peeled
remainder tile stops the collapse), which convert-parallel-to-runtime hands to the thread pool:
checked against numpy on 1, 2 and 3 threads. Loops that are not the outermost parallel ones, or
a count out of range, are one error.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from compiler.errors import CompileError
from compiler.model import make_context, run_passes
from tests.support.schedule_options import (
    HUGE,
    assert_one_option_error,
    assert_rejected_without_kernels,
)
from tests.support.scheduled_kernels import (
    bias_relu_src,
    fused_src,
    loops_ir,
    matmul_src,
    rowmax_src,
    run_kernel,
    scheduled,
)

RNG = np.random.default_rng(7)


def test_sets_only_the_parallel_loops() -> None:
    passes = ["default-schedule{width=8}", "tile{sizes=8,16,0}"]
    (before,) = scheduled(matmul_src(32, 16, 64), passes)
    assert before.parallel == 0
    (after,) = scheduled(matmul_src(32, 16, 64), [*passes, "parallelize{loops=2}"])
    assert after == replace(before, parallel=2)
    (sequential,) = scheduled(
        matmul_src(32, 16, 64), [*passes, "parallelize{loops=2}", "parallelize{loops=0}"]
    )
    assert sequential == before


def test_parallelize_makes_one_collapsed_scf_parallel() -> None:
    text = loops_ir(
        matmul_src(32, 16, 64),
        ["default-schedule{width=8}", "tile{sizes=8,16,0}", "parallelize{loops=2}"],
    )
    assert text.count('"scf.parallel"') == 1
    assert "operandSegmentSizes = array<i32: 2, 2, 2, 0>" in text  # two loops collapsed


def test_remainder_tile_stops_the_collapse() -> None:
    # loop 0 has 8-row tiles of 30 rows (a peeled remainder): nothing is collapsed after it
    text = loops_ir(
        matmul_src(30, 16, 64),
        ["default-schedule{width=8}", "tile{sizes=8,16,0}", "parallelize{loops=2}"],
    )
    assert '"scf.parallel"' not in text
    text = loops_ir(
        matmul_src(30, 16, 64),
        [
            "default-schedule{width=8}",
            "tile{sizes=8,16,0}",
            "interchange{order=1,0,2}",
            "parallelize{loops=2}",
        ],
    )
    assert "operandSegmentSizes = array<i32: 1, 1, 1, 0>" in text


@pytest.mark.parametrize("tiles,loops", [("8,16,0", 1), ("8,16,0", 2), ("4,8,0", 2), ("0,16,0", 2)])
def test_matmul_parallel(threads: int, tiles: str, loops: int) -> None:
    a = RNG.standard_normal((32, 21)).astype(np.float32)
    b = RNG.standard_normal((21, 64)).astype(np.float32)
    got = run_kernel(
        matmul_src(32, 21, 64),
        ["default-schedule{width=8}", f"tile{{sizes={tiles}}}", f"parallelize{{loops={loops}}}"],
        [a, b],
        (32, 64),
    )
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-5)


def test_elementwise_and_reduction_parallel(threads: int) -> None:
    x = RNG.standard_normal((12, 45)).astype(np.float32)
    bias = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(
        bias_relu_src(12, 45),
        ["default-schedule", "tile{sizes=3,0}", "parallelize{loops=1}"],
        [x, bias],
        (12, 45),
    )
    np.testing.assert_allclose(got, np.maximum(x + bias, 0), rtol=1e-6)
    got = run_kernel(
        rowmax_src(12, 33),
        ["default-schedule", "tile{sizes=4,0}", "parallelize{loops=1}"],
        [x[:, :33].copy()],
        (12,),
    )
    np.testing.assert_array_equal(got, x[:, :33].max(axis=1))


def test_fused_kernel_parallel(threads: int) -> None:
    from compiler.backends.llvm_cpu.compile import compile_module
    from compiler.pipelines import LEVELS
    from compiler.runtime import aligned_copy, aligned_empty

    m, k, n = 12, 17, 40
    ctx = make_context()
    module = Parser(ctx, fused_src(m, k, n, "3")).parse_module()
    run_passes(
        ctx,
        module,
        [
            "default-schedule{width=8}",
            "tile{sizes=4,0,0 op=1}",
            "parallelize{loops=1 op=1}",
            "convert-linalg-to-loops",
            *LEVELS["llvm-dialect"],
        ],
        verify_each=True,
    )
    a, b = (
        RNG.standard_normal((m, k)).astype(np.float32),
        RNG.standard_normal((k, n)).astype(np.float32),
    )
    bias, res = (
        RNG.standard_normal(n).astype(np.float32),
        RNG.standard_normal((m, n)).astype(np.float32),
    )
    t, y = aligned_empty((m, n)), aligned_empty((m, n))
    program = compile_module(module)
    assert program.parallel
    program.function("kernel")(*[aligned_copy(v) for v in (a, b, bias)], t, aligned_copy(res), y)
    np.testing.assert_allclose(y, np.maximum(a @ b + bias + res, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "passes,message",
    [
        (
            ["default-schedule", "parallelize{loops=3}"],
            "only the outermost parallel loops can run across threads",
        ),
        (
            ["default-schedule", "parallelize{loops=4}"],
            "option 'loops': 4 is out of range; allowed: 0..3",
        ),
    ],
)
def test_bad_parallelize(passes: list[str], message: str) -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(8, 8, 8)).parse_module()
    with pytest.raises(CompileError, match=message):
        run_passes(ctx, module, passes)


BAD = [
    (
        "parallelize{loops=-1}",
        "parallelize: option 'loops': -1 is out of range; allowed: 0 (sequential) up to",
    ),
    (
        "parallelize{loops=4}",
        "parallelize: option 'loops': 4 is out of range; allowed: 0..3 (the kernel has 3 loops)",
    ),
    (
        f"parallelize{{loops={HUGE}}}",
        f"parallelize: option 'loops': {HUGE} is out of range; allowed: 0..3",
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
    assert_rejected_without_kernels(capsys, tmp_path, "parallelize{loops=-1}")
