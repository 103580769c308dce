"""`ziggurat-opt` run in-process on a scheduled matmul, for the option tests of the schedule passes.

Every schedule pass checks its options itself: an out-of-range value is one `error:` line from
ziggurat-opt naming the pass, the option and the allowed range (`assert_one_option_error`).
The `scheduled_matmul` fixture of tests/conftest.py writes SCHEDULED_MATMUL to a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cli.opt import main as opt_main

SCHEDULED_MATMUL = """
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
"""One kernel, @matmul: i and j have 64 iterations, k 128; its schedule is SCHEDULED."""

SCHEDULED = "tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16"
HUGE = 2**40
"""Past every option's range."""

EMPTY_MODULE = "func.func @f() {\n  func.return\n}\n"
"""No kernel at all: an invalid option value is an error on it too."""


def run_opt(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`ziggurat-opt ARGV` in this process: (exit code, stdout, stderr)."""
    try:
        rc = opt_main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_option_error(
    capsys: pytest.CaptureFixture[str], path: Path, pipeline: str, message: str
) -> None:
    """`ziggurat-opt PATH -p PIPELINE` fails with exactly one `error: MESSAGE...` line, no
    output, no traceback, and the note naming the failed pass."""
    rc, out, err = run_opt(capsys, str(path), "-p", pipeline)
    assert rc == 1, err
    assert out == ""
    assert f"error: {message}" in err, err
    assert err.count("error:") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert f"note: pass '{pipeline.split('{')[0]}' failed" in err, err


def assert_rejected_without_kernels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pipeline: str
) -> None:
    """An invalid value is invalid on any input: the option error comes before the kernels are
    looked at, so a module without kernels gets it too."""
    empty = tmp_path / "empty.mlir"
    empty.write_text(EMPTY_MODULE)
    rc, _, err = run_opt(capsys, str(empty), "-p", pipeline)
    assert rc == 1 and f"error: {pipeline.split('{')[0]}: option '" in err, (pipeline, err)


def scheduled_after(capsys: pytest.CaptureFixture[str], path: Path, pipeline: str) -> str:
    """The output of `ziggurat-opt PATH -p PIPELINE`, which must succeed."""
    rc, out, err = run_opt(capsys, str(path), "-p", pipeline)
    assert rc == 0, err
    return out
