"""`unroll-jam{factors=...}` (passes/transforms/unroll_jam.py): the register tile of a kernel.

The pass edits only the `unroll` field of the schedules it targets. After
convert-linalg-to-loops, a parallel loop's factor is how many of its iterations share the
reduction loop, each with its own accumulator carried through it (for the vector loop the factor
counts elements: factor / width vectors); a reduction loop's factor is its step, unrolled in the
body. Every register tile computes the same result. A factor out of range, or one of the vector
loop that is not a multiple of the width, is one error naming the option; a factor past its
loop's extent is cut to it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

from tests.support.schedule_options import (
    HUGE,
    assert_one_option_error,
    assert_rejected_without_kernels,
    scheduled_after,
)
from tests.support.scheduled_kernels import (
    bias_relu_src,
    loop_nest,
    lowered,
    matmul_src,
    run_kernel,
    scheduled,
)

W8 = "default-schedule{width=8 cpu=znver4}"  # a fixed CPU: its register file sets the tile
"""Register tile of MATMUL: 5 rows x 16 columns (two vectors of 8), k unrolled by 1."""
MATMUL = matmul_src(20, 12, 32)
"""i: 20 iterations, j: 32, k: 12."""
RNG = np.random.default_rng(9)


def register_tile(module: ModuleOp) -> tuple[int, Counter[str]]:
    """The first reduction loop of `module` (the one carrying accumulators): how many it carries,
    and the ops of its body by name."""
    loop = next(op for op in module.walk() if isinstance(op, scf.ForOp) and op.iter_args)
    return len(loop.iter_args), Counter(op.name for op in loop.body.walk())


def test_sets_only_the_unroll_factors() -> None:
    (before,) = scheduled(MATMUL, [W8])
    assert before.unroll == (5, 16, 1)
    (after,) = scheduled(MATMUL, [W8, "unroll-jam{factors=2,16,3}"])
    assert after == replace(before, unroll=(2, 16, 3))


def test_factors_make_the_register_tile() -> None:
    # 2 rows x 16 columns = 2 x 2 vector accumulators; k steps by 3, unrolled in the body
    module = lowered(MATMUL, [W8, "unroll-jam{factors=2,16,3}"])
    assert loop_nest(module) == [(0, 20, 2, [(0, 32, 16, [(0, 12, 3, [])])])]
    accumulators, ops = register_tile(module)
    assert accumulators == 4
    assert ops["vector.fma"] == 4 * 3  # every accumulator, at each of the 3 unrolled k steps
    assert ops["vector.load"] == 2 * 3  # the two B vectors of a k step, loaded once
    assert ops["vector.broadcast"] == 2 * 3  # the two A elements of a k step
    assert ops["memref.load"] == 2 * 3
    # one accumulator: one row, one vector of 8, k by 1
    module = lowered(MATMUL, [W8, "unroll-jam{factors=1,8,1}"])
    assert loop_nest(module) == [(0, 20, 1, [(0, 32, 8, [(0, 12, 1, [])])])]
    accumulators, ops = register_tile(module)
    assert accumulators == 1 and ops["vector.fma"] == 1


@pytest.mark.parametrize("factors", ["1,8,1", "2,16,3", "3,24,5", "7,48,2", "4,8,37"])
def test_every_register_tile_matches_numpy(factors: str) -> None:
    m, k, n = 21, 37, 48  # factors that do not divide the extents leave remainders
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    passes = [W8, "tile{sizes=0,0,16}", f"unroll-jam{{factors={factors}}}"]
    got = run_kernel(matmul_src(m, k, n), passes, [a, b], (m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_unrolled_elementwise_kernel_matches_numpy() -> None:
    x = RNG.standard_normal((7, 45)).astype(np.float32)
    bias = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(bias_relu_src(7, 45), [W8, "unroll-jam{factors=3,24}"], [x, bias], (7, 45))
    np.testing.assert_allclose(got, np.maximum(x + bias, 0), rtol=1e-6)


BAD = [
    (
        "unroll-jam{factors=4,0,2}",
        "unroll-jam: option 'factors': 0 (loop 1) is out of range; allowed: 1..2147483647",
    ),
    (
        "unroll-jam{factors=-3,16,1}",
        "unroll-jam: option 'factors': -3 (loop 0) is out of range; allowed: 1..2147483647",
    ),
    (
        f"unroll-jam{{factors=8,16,{HUGE}}}",
        f"unroll-jam: option 'factors': {HUGE} (loop 2) is out of range",
    ),
    (
        "unroll-jam{factors=64,64,64}",
        "unroll-jam: the register tile (unroll [64, 64, 64], vector loop 1, width 16) "
        "holds 16384 copies of the body; at most 4096",
    ),
    (
        "unroll-jam{factors=4,40,2}",
        "unroll-jam: option 'factors': 40 (loop 1, the vector loop: it counts elements) "
        "is not a multiple of the vector width 16",
    ),
    (
        "unroll-jam{factors=1,16,1 op=3}",
        "unroll-jam: option 'op': 3 is out of range; allowed: -1..0",
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
    assert_rejected_without_kernels(capsys, tmp_path, "unroll-jam{factors=0}")


@pytest.mark.parametrize(
    ("pipeline", "schedule"),
    [
        # i and j have 64 iterations, k 128; the vector loop (j, width 16) counts elements: it
        # is cut to the extent, a multiple of the width
        (
            "unroll-jam{factors=100,96,1}",
            "tile = [0, 0, 0], order = [0, 1, 2], unroll = [64, 64, 1]",
        ),
        (
            "unroll-jam{factors=1,16,1000}",
            "tile = [0, 0, 0], order = [0, 1, 2], unroll = [1, 16, 128]",
        ),
    ],
)
def test_factors_past_the_extent_are_cut_to_it(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, schedule: str
) -> None:
    assert schedule in scheduled_after(capsys, scheduled_matmul, pipeline)


def test_cut_factors_compute_the_same_result() -> None:
    """The cut values are what the lowering did with the uncut ones: same numbers either way."""
    a = RNG.standard_normal((12, 20)).astype(np.float32)
    b = RNG.standard_normal((20, 24)).astype(np.float32)
    passes = [W8, "tile{sizes=100,1000,64}", "unroll-jam{factors=50,16,30}"]
    got = run_kernel(matmul_src(12, 20, 24), passes, [a, b], (12, 24))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
