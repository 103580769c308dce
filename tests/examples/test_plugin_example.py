"""tests/examples/relu_fold/, README "Your own passes": an out-of-tree pass package, installed as a
user installs it, seen by `ziggurat-opt` and stock `xdsl-opt` through its `xdsl.universe` entry
point, and tested with its own lit config.

The package is copied to a temporary folder and installed into a fresh venv made with
`--system-site-packages` (ziggurat, xDSL, lit and filecheck come from the environment running the
tests) by `pip install --no-deps --no-build-isolation`. The console scripts of those tools live
beside the outer Python and would run it, which does not see the venv, so the venv gets launchers
of its own for them: what a `pip install ziggurat` in that venv would have put there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent / "relu_fold"
TOOLS = {
    "ziggurat-opt": "compiler.cli.opt",
    "xdsl-opt": "xdsl.tools.xdsl_opt",
    "lit": "lit.main",
    "filecheck": "filecheck.main",
}
TIMEOUT = 600  # a hang guard, not a speed test: a busy CI host starts xDSL slowly

RELUS = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.relu %b : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
"""
FUSED = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.fused "relu+relu" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%0: tensor<4xf32>):
    %1 = graph.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
    %2 = graph.relu %1 : (tensor<4xf32>) -> tensor<4xf32>
    graph.yield %2 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
"""


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


class Venv:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.src = root / "relu_fold"
        self.bin = root / "venv" / "bin"
        self.python = self.bin / "python"
        self.env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.env.pop("PYTHONPATH", None)
        self.installed_by = ""

    def run(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return _run([str(a) for a in args], self.env, self.root)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip(
            "no setuptools here: `pip install --no-build-isolation` of the example needs it"
        )
    v = Venv(tmp_path_factory.mktemp("plugin"))
    shutil.copytree(
        EXAMPLE,
        v.src,
        ignore=shutil.ignore_patterns("Output", "build", "*.egg-info", "__pycache__"),
    )
    # --without-pip: the venv runs the outer environment's pip (and setuptools), installing here
    made = _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", "venv"],
        os.environ.copy(),
        v.root,
    )
    if made.returncode != 0 or not v.python.exists():
        pytest.skip(f"could not create a venv with `python -m venv`: {made.stderr.strip()[-300:]}")
    pip = v.run(v.python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", v.src)
    v.installed_by = "pip"
    if pip.returncode != 0 and "bdist_wheel" in pip.stdout + pip.stderr:
        # setuptools < 70.1 without the `wheel` package cannot build a wheel (Python 3.11's
        # bundled setuptools 65): install it in development mode, which needs no wheel
        pip = _run(
            [str(v.python), "-c", "import setuptools; setuptools.setup()", "develop", "--no-deps"],
            v.env,
            v.src,
        )
        v.installed_by = "setuptools develop"
    assert pip.returncode == 0, pip.stdout + pip.stderr
    for name, module in TOOLS.items():
        launcher = v.bin / name
        launcher.write_text(
            f"#!{v.python}\nimport sys\nfrom {module} import main\nsys.exit(main())\n"
        )
        launcher.chmod(0o755)
    (v.root / "relus.mlir").write_text(RELUS)
    (v.root / "fused.mlir").write_text(FUSED)
    return v


def _check_folded(out: str) -> None:
    """FileCheck-like: @main keeps one relu, and returns it."""
    body = out[out.index("func.func @main") :]
    lines = [ln.strip() for ln in body.splitlines()[1:3]]
    assert re.fullmatch(r"%(\w+) = graph\.relu %x : .*", lines[0]), out
    result = lines[0].split(" ", 1)[0]
    assert lines[1] == f"func.return {result} : tensor<4xf32>", out
    assert out.count("graph.relu") == 1, out


@pytest.mark.parametrize("tool", ["ziggurat-opt", "xdsl-opt"])
def test_entry_point_registers_the_pass(venv: Venv, tool: str) -> None:
    r = venv.run(tool, "relus.mlir", "-p", "relu-fold")
    assert r.returncode == 0, f"{venv.installed_by}: {r.stderr}"
    _check_folded(r.stdout)


def test_option(venv: Venv) -> None:
    r = venv.run("ziggurat-opt", "relus.mlir", "-p", "relu-fold{func=main}")
    assert r.returncode == 0, r.stderr
    _check_folded(r.stdout)
    r = venv.run("ziggurat-opt", "relus.mlir", "-p", "relu-fold{func=other}")
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert errors == [
        "relus.mlir: error: 'builtin.module' op relu-fold: no function @other in this module"
    ], r.stderr


def test_user_error_is_one_located_line(venv: Venv) -> None:
    r = venv.run("ziggurat-opt", "fused.mlir", "-p", "relu-fold")
    assert r.returncode == 1
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert errors == [
        "fused.mlir:2:3: error: 'graph.fused' op relu-fold runs on the graph level before fuse-ops"
    ], r.stderr


def test_lit(venv: Venv) -> None:
    for module in ("lit", "filecheck"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    r = venv.run("lit", "-v", venv.src / "test")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS: relu-fold :: relu_fold.mlir" in r.stdout, r.stdout
