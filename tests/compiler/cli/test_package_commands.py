"""`ziggurat compile MODEL -o X.zpkg` and `ziggurat run X.zpkg` (compiler/cli/main.py).

The round trip runs the console script as a user would and agrees with onnxruntime; `run` of a
package works in a process that cannot import ONNX, onnxruntime, the passes or the tuner; a
refused package, and options that do not apply to packages, end in one `ziggurat: error:` line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from compiler import zoo
from compiler.cli.main import main
from tests.support.cli import run_ziggurat as ziggurat
from tests.support.packages import run_python


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`ziggurat compile zoo:mlp -o m.zpkg`, as a subprocess."""
    path = tmp_path_factory.mktemp("cli") / "m.zpkg"
    proc = ziggurat("compile", "zoo:mlp", "-o", path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    feeds = zoo.random_inputs(zoo.mlp(), seed=8)
    np.savez(tmp_path / "in.npz", **feeds)
    return tmp_path / "in.npz", feeds


def error_line(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    """The one `ziggurat: error:` line of `ziggurat ARGV` run in this process (exit code 1)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    _, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ziggurat: error: "), err
    return lines[0].removeprefix("ziggurat: error: ")


def test_compile_then_run(
    package: Path, inputs: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    path, feeds = inputs
    out = tmp_path / "out.npz"
    proc = ziggurat("run", package, "--inputs", path, "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"output: shape [4, 10] -> {out}\n"
    session = ort.InferenceSession(zoo.mlp().SerializeToString())
    with np.load(out) as got:
        np.testing.assert_allclose(got["output"], session.run(None, feeds)[0], rtol=1e-4, atol=1e-4)


def test_run_imports_neither_xdsl_onnx_nor_the_passes(
    package: Path, inputs: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    code = (
        "from compiler.cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        "assert rc == 0, rc\n"
        "assert 'compiler.model' not in sys.modules and 'compiler.frontend.onnx' not in sys.modules\n"
    )
    out = tmp_path / "out.npz"
    proc = run_python(
        code,
        "run",
        str(package),
        "--inputs",
        str(inputs[0]),
        "--output",
        str(out),
        names=("xdsl", "onnx", "onnxruntime", "passes", "dialects", "autotune"),
    )
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()


def test_threads_option(
    package: Path, inputs: tuple[Path, dict[str, np.ndarray]], tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out.npz"
    assert (
        main(
            [
                "run",
                str(package),
                "--inputs",
                str(inputs[0]),
                "--output",
                str(out),
                "--threads",
                "2",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        error_line(capsys, "run", package, "--inputs", inputs[0], "--output", out, "--threads", "0")
        == "--threads must be at least 1 (got 0)"
    )


@pytest.mark.parametrize(
    "option",
    [
        ["--db", "t.jsonl"],
        ["--layout", "NCHW"],
        ["--no-graph-opt"],
        ["--input-shape", "input=1x64"],
    ],
)
def test_compile_options_do_not_apply_to_a_package(
    package: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    line = error_line(capsys, "run", package, "--inputs", "i.npz", "--output", "o.npz", *option)
    assert line == (
        f"{option[0]} does not apply to a package, which holds compiled code: give it to "
        f"`ziggurat compile MODEL -o {package}`"
    )


def test_a_package_for_another_target(
    package: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`run X.zpkg --target T` checks the package's target (GPU packages: test_gpu_packages.py)."""
    line = error_line(
        capsys,
        "run",
        package,
        "--inputs",
        "i.npz",
        "--output",
        tmp_path / "o.npz",
        "--target",
        "opencl",
    )
    assert line == f"{package}: is a package for cpu, not for opencl"


def test_a_refused_package(
    package: Path, inputs: tuple[Path, dict[str, np.ndarray]], tmp_path: Path, capsys
) -> None:
    shared = tmp_path / "m.zpkg"
    shutil.copy(package, shared)
    os.chmod(shared, 0o666)
    line = error_line(capsys, "run", shared, "--inputs", inputs[0], "--output", tmp_path / "o.npz")
    assert line == (
        f"{shared}: is writable by group or others (mode 0o666); loading runs its native code: "
        f"`chmod go-w {shared}` if you trust it"
    )
    shared.write_bytes(b"PK\x03\x04 not really")
    os.chmod(shared, 0o644)
    line = error_line(capsys, "run", shared, "--inputs", inputs[0], "--output", tmp_path / "o.npz")
    assert (
        line
        == f"{shared}: is not a valid package: truncated or corrupt zip (File is not a zip file)"
    )


def test_wrong_inputs(package: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "bad.npz", x=np.zeros(3, np.float32))
    line = error_line(
        capsys, "run", package, "--inputs", tmp_path / "bad.npz", "--output", tmp_path / "o.npz"
    )
    assert line == "unknown input name(s) ['x']; the model's inputs are ['input']"


def test_compile_to_a_package_prints_no_level(tmp_path: Path, capsys) -> None:
    line = error_line(capsys, "compile", "zoo:mlp", "--emit", "loops", "-o", tmp_path / "m.zpkg")
    assert line == (
        "--emit loops prints one level; a .zpkg output is a package of machine code: drop --emit "
        "or name another output file"
    )
    line = error_line(
        capsys,
        "compile",
        "zoo:mlp",
        "--target",
        "cuda",
        "--layout",
        "NCHW8c",
        "-o",
        tmp_path / "m.zpkg",
    )
    assert line == "--layout NCHW8c is for the CPU; GPU kernels read NCHW"
    line = error_line(capsys, "compile", "zoo:mlp", "-o", tmp_path / "no" / "m.zpkg")
    assert (
        line == f"{tmp_path / 'no' / 'm.zpkg'}: cannot write the package: No such file or directory"
    )
