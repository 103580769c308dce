"""Every schedule pass checks its options itself: an out-of-range value (negative, zero where
that means nothing, absurdly large, not a permutation, an operand or op that does not exist) is
one `error:` line from ziggurat-opt naming the pass, the option and the allowed range. Sizes and
factors past a loop's extent are cut to it (the lowering treats them so anyway)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.opt import main as opt_main

MATMUL = """
func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
"""
HUGE = 2**40


@pytest.fixture
def matmul(tmp_path: Path) -> Path:
    path = tmp_path / "matmul.mlir"
    path.write_text(MATMUL)
    return path


def run_opt(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = opt_main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


BAD = [
    # (pipeline, the message after "error: ")
    (
        "tile{sizes=0,-1,0}",
        "tile: option 'sizes': -1 (loop 1) is out of range; allowed: 0..2147483648",
    ),
    (
        f"tile{{sizes=0,0,{HUGE}}}",
        f"tile: option 'sizes': {HUGE} (loop 2) is out of range; allowed: 0..2147483648",
    ),
    (
        "tile{sizes=0,0,0 op=1}",
        "tile: option 'op': 1 is out of range; allowed: -1..0 (@matmul has 1 linalg.generic op)",
    ),
    (
        "tile{sizes=0,0,0 op=-2}",
        "tile: option 'op': -2 is out of range; allowed: -1 (every linalg.generic",
    ),
    (
        "unroll-jam{factors=4,0,2}",
        "unroll-jam: option 'factors': 0 (loop 1) is out of range; allowed: 1..2147483648",
    ),
    (
        "unroll-jam{factors=-3,16,1}",
        "unroll-jam: option 'factors': -3 (loop 0) is out of range; allowed: 1..2147483648",
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
    (
        "vectorize{dim=0 width=-4}",
        "vectorize: option 'width': -4 is out of range; allowed: 0..64 (0: the host CPU's widest)",
    ),
    (
        f"vectorize{{dim=0 width={HUGE}}}",
        f"vectorize: option 'width': {HUGE} is out of range; allowed: 0..64",
    ),
    (
        "vectorize{dim=-2}",
        "vectorize: option 'dim': -2 is out of range; allowed: -1 (scalar code) or a loop",
    ),
    (
        "vectorize{dim=3}",
        "vectorize: option 'dim': loop 3 does not exist; allowed: -1..2 (-1: scalar code; the kernel has 3 loops)",
    ),
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
        "pack{operands=2}",
        "pack: option 'operands': 2 is out of range; allowed: 0..1 (the kernel's inputs",
    ),
    (
        "pack{operands=-1}",
        "pack: option 'operands': -1 is out of range; allowed: an input operand of the kernel",
    ),
    ("pack{operands=1,1}", "pack: option 'operands': 1,1 names an operand twice"),
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
        "default-schedule: option 'width': -1 is out of range; allowed: 0..64",
    ),
    (
        "default-schedule{width=65}",
        "default-schedule: option 'width': 65 is out of range; allowed: 0..64",
    ),
    (
        'autotune{db="x.jsonl" trials=-1}',
        "autotune: option 'trials': -1 is out of range; allowed: 0..1000000",
    ),
    (
        f'autotune{{db="x.jsonl" trials={HUGE}}}',
        f"autotune: option 'trials': {HUGE} is out of range; allowed: 0..1000000",
    ),
    (
        'autotune{db="x.jsonl" threads=0}',
        "autotune: option 'threads': 0 is out of range; allowed: 1..1024",
    ),
    (
        'autotune{db="x.jsonl" seed=-1}',
        "autotune: option 'seed': -1 is out of range; allowed: 0 or more",
    ),
    (
        'autotune{db="x.jsonl" tuner="best"}',
        "autotune: option 'tuner': unknown tuner 'best' (available: xgb, random)",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], matmul: Path, pipeline: str, message: str
) -> None:
    rc, out, err = run_opt(capsys, str(matmul), "-p", pipeline)
    assert rc == 1, err
    assert out == ""
    assert f"error: {message}" in err, err
    assert err.count("error:") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert f"note: pass '{pipeline.split('{')[0]}' failed" in err, err


def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An invalid value is invalid on any input, one without kernels too."""
    empty = tmp_path / "empty.mlir"
    empty.write_text("func.func @f() {\n  func.return\n}\n")
    for pipeline in [
        "tile{sizes=-1}",
        "unroll-jam{factors=0}",
        "vectorize{width=-1}",
        "pack{operands=-1}",
        "parallelize{loops=-1}",
        "tile{op=-5}",
        "default-schedule{threads=0}",
    ]:
        rc, _, err = run_opt(capsys, str(empty), "-p", pipeline)
        assert rc == 1 and f"error: {pipeline.split('{')[0]}: option '" in err, (pipeline, err)


@pytest.mark.parametrize(
    ("pipeline", "schedule"),
    [
        # i and j have 64 iterations, k 128: a size past the extent is cut to it
        ("tile{sizes=0,1000,64}", "tile = [0, 64, 64], order = [0, 1, 2], unroll = [8, 32, 1]"),
        (
            "tile{sizes=2147483648,0,129}",
            "tile = [64, 0, 128], order = [0, 1, 2], unroll = [8, 32, 1]",
        ),
        # the vector loop (j, width 16) counts elements: cut to the extent, a multiple of the width
        (
            "unroll-jam{factors=100,96,1}",
            "tile = [0, 0, 0], order = [0, 1, 2], unroll = [64, 64, 1]",
        ),
        (
            "unroll-jam{factors=1,16,1000}",
            "tile = [0, 0, 0], order = [0, 1, 2], unroll = [1, 16, 128]",
        ),
        ("vectorize{dim=1 width=64}", "unroll = [8, 64, 1], vector = 1, width = 64"),
    ],
)
def test_values_past_the_extent_are_cut_to_it(
    capsys: pytest.CaptureFixture[str], matmul: Path, pipeline: str, schedule: str
) -> None:
    rc, out, err = run_opt(capsys, str(matmul), "-p", pipeline)
    assert rc == 0, err
    assert schedule in out, out


def test_cut_schedules_compute_the_same_result() -> None:
    """The cut values are what the lowering did with the uncut ones: same numbers either way."""
    import sys

    import numpy as np

    sys.path.insert(0, str(Path(__file__).parents[1] / "conversions"))
    from test_convert_linalg_to_loops import matmul_src, run_kernel

    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 20)).astype(np.float32)
    b = rng.standard_normal((20, 24)).astype(np.float32)
    for passes in (
        ["default-schedule{width=8}", "tile{sizes=100,1000,64}", "unroll-jam{factors=50,16,30}"],
        ["default-schedule{width=8}", "vectorize{dim=1 width=64}", "tile{sizes=5,0,1000}"],
    ):
        got = run_kernel(matmul_src(12, 20, 24), passes, [a, b], (12, 24))
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
