"""The `xdsl.universe` entry point: stock `xdsl-opt` sees our dialects and passes."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GRAPH_ADD = """\
func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}
"""


def xdsl_opt() -> str:
    script = Path(sys.executable).parent / "xdsl-opt"
    found = str(script) if script.is_file() else shutil.which("xdsl-opt")
    if found is None:
        pytest.skip("xdsl-opt not installed")
    return found


def test_entry_point_is_registered() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="xdsl.universe")}
    assert eps.get("ziggurat") == "compiler.cli.universe:UNIVERSE"


def test_universe_lists_graph_dialect_and_our_passes() -> None:
    from compiler.cli.universe import UNIVERSE

    assert "graph" in UNIVERSE.all_dialects
    assert "convert-graph-to-linalg" in UNIVERSE.all_passes


def test_stock_xdsl_opt_parses_graph_and_lowers_it() -> None:
    r = subprocess.run(
        [xdsl_opt(), "-p", "convert-graph-to-linalg"],
        input=GRAPH_ADD,
        capture_output=True,
        text=True,
        cwd="/",
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "graph." not in r.stdout
    assert "linalg.generic" in r.stdout
    assert "arith.addf" in r.stdout


def test_stock_xdsl_opt_roundtrips_graph() -> None:
    r = subprocess.run(
        [xdsl_opt()], input=GRAPH_ADD, capture_output=True, text=True, cwd="/", timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert (
        "%a = graph.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>" in r.stdout
    )


COPY_4 = """\
func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], \
iterator_types = ["parallel"]} ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  func.return
}
"""


def test_loop_lowering_alias_runs_in_xdsl_opt_and_ziggurat_opt() -> None:
    """Stock xdsl-opt sees our loop lowering as `ziggurat-convert-linalg-to-loops` (xDSL has its
    own convert-linalg-to-loops); the alias once died there with "Spec name mismatch"."""

    def run(*cmd: str) -> str:
        r = subprocess.run(
            list(cmd), input=COPY_4, capture_output=True, text=True, cwd="/", timeout=120
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    ziggurat_opt = [sys.executable, "-m", "compiler.cli.opt"]
    ours = run(*ziggurat_opt, "-p", "convert-linalg-to-loops")
    assert "vector.load" in ours and "linalg." not in ours
    assert run(xdsl_opt(), "-p", "ziggurat-convert-linalg-to-loops") == ours
    assert run(*ziggurat_opt, "-p", "ziggurat-convert-linalg-to-loops") == ours
