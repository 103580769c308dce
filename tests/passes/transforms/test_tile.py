"""`tile{sizes=...}` (passes/transforms/tile.py): the cache tile sizes of a kernel's schedule.

The pass edits only the `tile` field of the schedules it targets (`kernel=`, `op=`);
convert-linalg-to-loops then makes a tile loop stepping by the tile size for every tiled loop
(the last, partial tile peeled), and the tiled kernel computes what the untiled one does.
An out-of-range size is one error naming the option; a size past its loop's extent is cut to it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from tests.support import schedule_kernels
from tests.support.schedule_options import (
    HUGE,
    assert_one_option_error,
    assert_rejected_without_kernels,
    scheduled_after,
)
from tests.support.scheduled_kernels import (
    conv_reference,
    conv_src,
    fused_src,
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
RNG = np.random.default_rng(3)


def test_sets_only_the_tile_sizes() -> None:
    (before,) = scheduled(MATMUL, [W8])
    (after,) = scheduled(MATMUL, [W8, "tile{sizes=10,16,4}"])
    assert after == replace(before, tile=(10, 16, 4))
    (again,) = scheduled(MATMUL, [W8, "tile{sizes=10,16,4}", "tile{sizes=0,0,0}"])
    assert again == before


def test_kernel_and_op_select_the_schedules_it_edits() -> None:
    two = schedule_kernels.matmul(8, 16, 32) + schedule_kernels.RELU
    matmul, relu = scheduled(two, [W8])
    assert scheduled(two, [W8, "tile{sizes=2,16 kernel=relu}"]) == [
        matmul,
        replace(relu, tile=(2, 16)),
    ]
    # a fused kernel holds three generics (bias init, matmul, epilogue): op=1 is the matmul
    fused = fused_src(6, 17, 40, "3")
    init, mm, epilogue = scheduled(fused, [W8])
    assert scheduled(fused, [W8, "tile{sizes=0,0,4 op=1}"]) == [
        init,
        replace(mm, tile=(0, 0, 4)),
        epilogue,
    ]


def test_no_kernel_of_that_name_is_an_error() -> None:
    ctx = make_context()
    module = Parser(ctx, MATMUL).parse_module()
    with pytest.raises(CompileError, match="tile: no kernel named 'nope'"):
        run_passes(ctx, module, [W8, "tile{sizes=4,4,4 kernel=nope}"])


def test_tile_loops_step_by_the_tile_sizes() -> None:
    # untiled: the point loops only, i by the register tile's 5 rows, j by 16, k by 1
    assert loop_nest(lowered(MATMUL, [W8])) == [(0, 20, 5, [(0, 32, 16, [(0, 12, 1, [])])])]
    # i in tiles of 10: the point loop over each tile's rows has the tile's (dynamic) bounds
    assert loop_nest(lowered(MATMUL, [W8, "tile{sizes=10,0,0}"])) == [
        (0, 20, 10, [(None, None, 5, [(0, 32, 16, [(0, 12, 1, [])])])])
    ]
    # k in tiles of 4 too: the fill of C becomes a loop of its own (the partial sums of the
    # first k tile go through C), and the reduction runs over each k tile
    assert loop_nest(lowered(MATMUL, [W8, "tile{sizes=10,0,4}"])) == [
        (0, 20, 1, []),
        (0, 20, 10, [(0, 12, 4, [(None, None, 5, [(0, 32, 16, [(None, None, 1, [])])])])]),
    ]


def test_a_partial_last_tile_is_peeled() -> None:
    # 20 rows in tiles of 8: two full tiles of two register tiles each (5 + 3 rows, one k loop
    # each), then the last 4 rows as a nest of their own
    assert loop_nest(lowered(MATMUL, [W8, "tile{sizes=8,16,0}"])) == [
        (0, 16, 8, [(0, 32, 16, [(0, 12, 1, []), (0, 12, 1, [])])]),
        (0, 32, 16, [(0, 12, 1, [])]),
    ]


@pytest.mark.parametrize(
    "sizes", ["8,32,16", "5,24,7", "0,0,5", "3,8,4", "21,48,37", "100,1000,64"]
)
def test_tiled_matmul_matches_numpy(sizes: str) -> None:
    m, k, n = 21, 37, 48
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    got = run_kernel(matmul_src(m, k, n), [W8, f"tile{{sizes={sizes}}}"], [a, b], (m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sizes", ["0,8,2,3,0,0,0", "0,16,4,0,2,1,0"])
def test_tiled_conv_matches_numpy(sizes: str) -> None:
    c, h, o, k, stride = 5, 11, 24, 3, 2
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, stride)
    got = run_kernel(
        conv_src(c, h, o, k, stride), [W8, f"tile{{sizes={sizes}}}"], [x, w], ref.shape
    )
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


BAD = [
    # (pipeline, the message after "error: ")
    (
        "tile{sizes=0,-1,0}",
        "tile: option 'sizes': -1 (loop 1) is out of range; allowed: 0..2147483647",
    ),
    (
        f"tile{{sizes=0,0,{HUGE}}}",
        f"tile: option 'sizes': {HUGE} (loop 2) is out of range; allowed: 0..2147483647",
    ),
    (
        "tile{sizes=4,4}",
        "tile: expected 3 tile sizes (one per loop), got 2, in @matmul, linalg.generic #0 "
        "(kernel=NAME and op=N limit the pass to one op)",
    ),
    (
        "tile{sizes=4,4 kernel=matmul op=0}",
        "tile: expected 3 tile sizes (one per loop), got 2, in @matmul, linalg.generic #0\n",
    ),
    (
        "tile{sizes=0,0,0 op=1}",
        "tile: option 'op': 1 is out of range; allowed: -1..0 (@matmul has 1 linalg.generic op)",
    ),
    (
        "tile{sizes=0,0,0 op=-2}",
        "tile: option 'op': -2 is out of range; allowed: -1 (every linalg.generic",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)


@pytest.mark.parametrize("pipeline", ["tile{sizes=-1}", "tile{op=-5}"])
def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pipeline: str
) -> None:
    assert_rejected_without_kernels(capsys, tmp_path, pipeline)


@pytest.mark.parametrize(
    ("pipeline", "schedule"),
    [
        # i and j have 64 iterations, k 128: a size past the extent is cut to it
        ("tile{sizes=0,1000,64}", "tile = [0, 64, 64], order = [0, 1, 2], unroll = [8, 32, 1]"),
        (
            "tile{sizes=2147483647,0,129}",
            "tile = [64, 0, 128], order = [0, 1, 2], unroll = [8, 32, 1]",
        ),
    ],
)
def test_sizes_past_the_extent_are_cut_to_it(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, schedule: str
) -> None:
    assert schedule in scheduled_after(capsys, scheduled_matmul, pipeline)


def test_cut_sizes_compute_the_same_result() -> None:
    """The cut values are what the lowering did with the uncut ones: same numbers either way."""
    a = RNG.standard_normal((12, 20)).astype(np.float32)
    b = RNG.standard_normal((20, 24)).astype(np.float32)
    for sizes in ("100,1000,64", "5,0,1000"):
        got = run_kernel(matmul_src(12, 20, 24), [W8, f"tile{{sizes={sizes}}}"], [a, b], (12, 24))
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
