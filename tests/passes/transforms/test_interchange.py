"""`interchange{order=...}` (passes/transforms/interchange.py): the loop order of a kernel's
schedule, outermost first.

The pass edits only the `order` field of the schedules it targets; convert-linalg-to-loops nests
the tile loops in that order, and the point loops of the parallel dimensions too (the reduction
loop stays innermost, inside the register tile). Every order computes the same result. An order
that is not a permutation of the kernel's loops is one error naming the option.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.support.schedule_options import (
    assert_one_option_error,
    assert_rejected_without_kernels,
)
from tests.support.scheduled_kernels import (
    conv_reference,
    conv_src,
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
RNG = np.random.default_rng(5)


def test_sets_only_the_order() -> None:
    (before,) = scheduled(MATMUL, [W8, "tile{sizes=10,16,6}"])
    (after,) = scheduled(MATMUL, [W8, "tile{sizes=10,16,6}", "interchange{order=2,1,0}"])
    assert after == replace(before, order=(2, 1, 0))


def test_point_loops_follow_the_order() -> None:
    assert loop_nest(lowered(MATMUL, [W8])) == [(0, 20, 5, [(0, 32, 16, [(0, 12, 1, [])])])]
    assert loop_nest(lowered(MATMUL, [W8, "interchange{order=1,0,2}"])) == [
        (0, 32, 16, [(0, 20, 5, [(0, 12, 1, [])])])
    ]
    # the reduction loop carries the register tile's accumulators: it stays innermost
    assert loop_nest(lowered(MATMUL, [W8, "interchange{order=2,0,1}"])) == [
        (0, 20, 5, [(0, 32, 16, [(0, 12, 1, [])])])
    ]


def test_tile_loops_follow_the_order() -> None:
    assert loop_nest(lowered(MATMUL, [W8, "tile{sizes=10,16,0}", "interchange{order=1,0,2}"])) == [
        (0, 32, 16, [(0, 20, 10, [(None, None, 5, [(0, 12, 1, [])])])])
    ]
    # k tiles outermost, then j, then i; the fill of C is a loop of its own (k is tiled)
    assert loop_nest(lowered(MATMUL, [W8, "tile{sizes=10,16,6}", "interchange{order=2,1,0}"])) == [
        (0, 20, 1, []),
        (0, 12, 6, [(0, 32, 16, [(0, 20, 10, [(None, None, 5, [(None, None, 1, [])])])])]),
    ]


@pytest.mark.parametrize("order", ["0,1,2", "1,0,2", "2,1,0", "2,0,1", "0,2,1", "1,2,0"])
def test_every_order_of_a_tiled_matmul_matches_numpy(order: str) -> None:
    m, k, n = 21, 37, 48
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    passes = [W8, "tile{sizes=8,16,10}", f"interchange{{order={order}}}"]
    got = run_kernel(matmul_src(m, k, n), passes, [a, b], (m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_interchanged_conv_matches_numpy() -> None:
    c, h, o, k, stride = 5, 11, 24, 3, 1
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, stride)
    passes = [W8, "tile{sizes=0,8,3,0,2,0,0}", "interchange{order=4,2,1,0,3,5,6}"]
    got = run_kernel(conv_src(c, h, o, k, stride), passes, [x, w], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


BAD = [
    (
        "interchange{order=0,0,1}",
        "interchange: option 'order': 0,0,1 is not a permutation of the kernel's 3 loops (each of 0..2 once",
    ),
    (
        "interchange{order=0,1,5}",
        "interchange: option 'order': 0,1,5 is not a permutation of the kernel's 3 loops",
    ),
    ("interchange{order=-1,0,1}", "interchange: option 'order': -1,0,1 is not a permutation"),
    ("interchange{order=1,0}", "interchange: expected 3 loop positions (one per loop), got 2"),
    ("interchange{order=1,0,2,3}", "interchange: expected 3 loop positions (one per loop), got 4"),
    (
        "interchange{order=1,0,2 op=1}",
        "interchange: option 'op': 1 is out of range; allowed: -1..0",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_bad_order_is_one_error_naming_pass_and_option(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)


def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_rejected_without_kernels(capsys, tmp_path, "interchange{op=-5}")
