"""`ziggurat` (compiler/cli/main.py) as users meet it: every bad input ends in one clear
`ziggurat: error:` line and exit code 1, never a traceback; `compile --emit` prints each level;
`demo` agrees with onnxruntime.

Most error cases call `compiler.cli.main` in-process (an escaping exception fails the test just as
a traceback would, and it saves a second of interpreter start-up per case); a few run the console
script as a subprocess to pin down the real exit code and stderr. `ziggurat-opt`'s messages are
tested in test_opt.py.

`ziggurat tune` and `--db` run as subprocesses on a single-node 64x64 MatMul model: the progress
line and summary table, `--plot`, tuned schedules that still compute the right result, clear
messages for an empty or missing database or one that is no regular file (a FIFO, a device), and a
tuning run killed with SIGKILL that resumes with no record lost, duplicated or torn.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler import zoo
from compiler.cli.main import main
from tests.support import REPO_ROOT
from tests.support.cli import ziggurat_cmd

REPO = REPO_ROOT


def run_cli(*args: str | Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ziggurat_cmd(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """main() in-process -> (exit code, stdout, stderr); argparse's SystemExit counts as a return."""
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(result: tuple[int, str, str], message: str) -> None:
    rc, out, err = result
    assert rc == 1, (rc, err)
    assert message in err, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.count("error:") == 1, err


# -- models and inputs -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-op model (x -> relu(x), x: 1x3x4x4) that compiles in well under a second."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "tiny", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    path = tmp_path_factory.mktemp("tiny") / "tiny.onnx"
    onnx.save(m, path)
    return path


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cnn") / "small_cnn.onnx"
    onnx.save(zoo.small_cnn(), path)
    return path


def npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def run_tiny(
    capsys: pytest.CaptureFixture[str], tiny: Path, inputs: Path, tmp_path: Path
) -> tuple[int, str, str]:
    return call(
        capsys, "run", str(tiny), "--inputs", str(inputs), "--output", str(tmp_path / "out.npz")
    )


# -- the happy path of `run` on the tiny model (so the error cases below are not vacuous) ------


def test_run_tiny_model(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32)
    rc, out, err = run_tiny(capsys, tiny, npz(tmp_path / "in.npz", x=x), tmp_path)
    assert rc == 0, err
    assert f"y: shape [1, 3, 4, 4] -> {tmp_path / 'out.npz'}" in out
    with np.load(tmp_path / "out.npz") as data:
        np.testing.assert_array_equal(data["y"], np.maximum(x, 0))


# -- bad model files -----------------------------------------------------------------------------


def test_missing_model_file_subprocess(tmp_path: Path) -> None:
    r = run_cli("compile", str(tmp_path / "nope.onnx"), "--emit", "graph")
    assert r.returncode == 1
    assert r.stderr == f"ziggurat: error: model file not found: {tmp_path / 'nope.onnx'}\n"
    assert r.stdout == ""


def test_missing_model_file_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    assert_user_error(
        run_tiny(capsys, tmp_path / "nope.onnx", inputs, tmp_path), "model file not found:"
    )


def test_non_onnx_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_text("this is not an ONNX model\n")
    assert_user_error(
        call(capsys, "compile", str(bad), "--emit", "graph"), f"{bad} is not a valid ONNX model"
    )


def test_truncated_onnx_file(capsys: pytest.CaptureFixture[str], cnn: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.onnx"
    data = cnn.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert_user_error(
        call(capsys, "compile", str(cut), "--emit", "graph"), f"{cut} is not a valid ONNX model"
    )


@pytest.fixture(scope="module")
def unsupported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid model with two operators ziggurat does not support."""
    nodes = [
        helper.make_node("Bernoulli", ["x"], ["v"], name="my_coin"),
        helper.make_node("Multinomial", ["scores"], ["sel"], name="my_draw"),
    ]
    g = helper.make_graph(
        nodes,
        "unsupported",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("sel", TensorProto.INT32, [1, 1]),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    path = tmp_path_factory.mktemp("unsupported") / "unsupported.onnx"
    onnx.save(m, path)
    return path


def test_unsupported_operators_listed_together(unsupported: Path) -> None:
    r = run_cli("compile", str(unsupported), "--emit", "graph")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr == (
        "ziggurat: error: unsupported ONNX operators (opset 17): "
        "Bernoulli (node 'my_coin'), Multinomial (node 'my_draw')\n"
    )


# -- bad inputs for `run` ---------------------------------------------------------------------


def test_unknown_input_name(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(
        tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32), z=np.zeros(3, np.float32)
    )
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path),
        "unknown input name(s) ['z']; the model's inputs are ['x']",
    )


def test_a_wrong_input_is_reported_before_the_compile(
    capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inputs are checked against the imported model's signature: no level is lowered."""
    from compiler.backends import cpu

    def no_lowering(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was lowered before its inputs were checked")

    monkeypatch.setattr(cpu.CpuBackend, "lower", no_lowering)
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 5), np.float32))
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path),
        "input 'x' has shape [1, 3, 4, 5]; the model expects [1, 3, 4, 4]",
    )


def test_missing_input(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    assert_user_error(
        run_tiny(capsys, tiny, npz(tmp_path / "in.npz"), tmp_path),
        "missing input 'x' (shape [1, 3, 4, 4], float32)",
    )


def test_wrong_input_shape(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 5), np.float32))
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path),
        "input 'x' has shape [1, 3, 4, 5]; the model expects [1, 3, 4, 4]",
    )


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_wrong_input_dtype(
    capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path, dtype: str
) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), dtype))
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path),
        f"input 'x' has dtype {dtype}; the model expects float32",
    )


def test_missing_inputs_file(
    capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path
) -> None:
    assert_user_error(
        run_tiny(capsys, tiny, tmp_path / "nope.npz", tmp_path),
        f"inputs file not found: {tmp_path / 'nope.npz'}",
    )


@pytest.mark.parametrize("kind", ["text", "npy", "pickled-object"])
def test_bad_npz(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "in.npz"
    if kind == "text":
        bad.write_text("x = 1\n")
    elif kind == "npy":  # a single .npy array under an .npz name
        with open(bad, "wb") as f:
            np.save(f, np.zeros((1, 3, 4, 4), np.float32))
    else:
        np.savez(bad, x=np.array([1, "a"], dtype=object))
    assert_user_error(run_tiny(capsys, tiny, bad, tmp_path), f"{bad} is not a valid .npz archive")


def test_unwritable_output(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    out = tmp_path / "no" / "such" / "dir" / "out.npz"
    result = call(capsys, "run", str(tiny), "--inputs", str(inputs), "--output", str(out))
    assert_user_error(result, f"cannot write output file {out}: No such file or directory")
    out = tmp_path / "no" / "out.mlir"
    result = call(capsys, "compile", str(tiny), "--emit", "graph", "-o", str(out))
    assert_user_error(result, f"cannot write output file {out}: No such file or directory")


def _failing_open(monkeypatch: pytest.MonkeyPatch, path: Path, err: int) -> None:
    """Make compiler.cli's open() of `path` fail with errno `err` (tests run as root, so a
    chmod would not stop them)."""
    import builtins
    import errno
    import os

    import compiler.cli.common as cli

    def fake_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if os.fspath(file) == str(path):
            raise OSError(err, os.strerror(err), str(path))
        return builtins.open(file, *args, **kwargs)

    assert err in errno.errorcode
    monkeypatch.setattr(cli, "open", fake_open, raising=False)


@pytest.mark.parametrize("threads", ["0", "1025", str(2**40)])
def test_threads_out_of_range(capsys: pytest.CaptureFixture[str], tiny: Path, threads: str) -> None:
    """Before compiling: the default-schedule pass would reject it later, less clearly."""
    message = "at least 1" if threads == "0" else "at most 1024, the thread pool's limit"
    for argv in (["compile", str(tiny), "--emit", "loops"], ["bench", str(tiny)]):
        assert_user_error(
            call(capsys, *argv, "--threads", threads),
            f"--threads must be {message} (got {threads})",
        )


def test_bench_missing_model_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression: `bench` loaded the model itself and died with an internal FileNotFoundError."""
    assert_user_error(
        call(capsys, "bench", str(tmp_path / "nope.onnx")),
        f"model file not found: {tmp_path / 'nope.onnx'}",
    )
    # a directory is a set of models (`ziggurat bench DIR`): an empty one says so
    assert_user_error(
        call(capsys, "bench", str(tmp_path)), f"no .onnx files in the directory {tmp_path}"
    )


def test_bench_model_file(capsys: pytest.CaptureFixture[str], tiny: Path) -> None:
    """`bench` loads a model file through the frontend's loader, as `compile` and `run` do."""
    import json

    rc, out, err = call(capsys, "bench", str(tiny), "--seconds", "0.05", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["model"] == "tiny" and result["max_abs_err"] == 0.0


@pytest.mark.parametrize("command", ["bench", "run", "compile"])
def test_unreadable_model_file(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tiny: Path,
    tmp_path: Path,
    command: str,
) -> None:
    import errno

    _failing_open(monkeypatch, tiny, errno.EACCES)
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    argv = {
        "bench": ["bench", str(tiny)],
        "compile": ["compile", str(tiny), "--emit", "graph"],
        "run": ["run", str(tiny), "--inputs", str(inputs), "--output", str(tmp_path / "out.npz")],
    }[command]
    assert_user_error(call(capsys, *argv), f"cannot read model file {tiny}: Permission denied")


def test_unreadable_inputs_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path
) -> None:
    import errno

    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    _failing_open(monkeypatch, inputs, errno.EIO)
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path),
        f"cannot read inputs file {inputs}: Input/output error",
    )


def test_output_under_a_file_or_onto_a_directory(
    capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path
) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    (tmp_path / "file.txt").write_text("")
    for out, why in [
        (tmp_path / "file.txt" / "out.npz", "Not a directory"),
        (tmp_path, "Is a directory"),
    ]:
        result = call(capsys, "run", str(tiny), "--inputs", str(inputs), "--output", str(out))
        assert_user_error(result, f"cannot write output file {out}: {why}")
        result = call(capsys, "compile", str(tiny), "--emit", "graph", "-o", str(out))
        assert_user_error(result, f"cannot write output file {out}: {why}")
    assert not (tmp_path.parent / f"{tmp_path.name}.npz").exists()  # numpy's suffix: not added


def test_run_output_is_written_exactly_where_named(
    capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path
) -> None:
    """Regression: np.savez(path) appended `.npz`, so `--output out` wrote out.npz (and
    `--output /dev/full` succeeded by creating /dev/full.npz)."""
    x = np.ones((1, 3, 4, 4), np.float32)
    out = tmp_path / "result"
    rc, stdout, err = call(
        capsys,
        "run",
        str(tiny),
        "--inputs",
        str(npz(tmp_path / "in.npz", x=x)),
        "--output",
        str(out),
    )
    assert rc == 0, err
    assert f"-> {out}" in stdout and not (tmp_path / "result.npz").exists()
    with np.load(out) as data:
        np.testing.assert_array_equal(data["y"], x)


@pytest.mark.parametrize("command", ["run", "compile"])
def test_full_disk_leaves_no_partial_output(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tiny: Path,
    tmp_path: Path,
    command: str,
) -> None:
    import builtins
    import errno

    import compiler.cli.common as cli

    out = tmp_path / "out.bin"

    class FullDisk:
        """The output file on a disk that fills up after its first few bytes."""

        def __init__(self, f) -> None:  # noqa: ANN001
            self._f = f

        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(self._f, name)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self._f.close()

        def write(self, data) -> int:  # noqa: ANN001
            self._f.write(bytes(data)[:3])
            self._f.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

    def fake_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        f = builtins.open(file, *args, **kwargs)
        return FullDisk(f) if str(file) == str(out) else f

    monkeypatch.setattr(cli, "open", fake_open, raising=False)
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    argv = (
        ["run", str(tiny), "--inputs", str(inputs), "--output", str(out)]
        if command == "run"
        else ["compile", str(tiny), "--emit", "graph", "-o", str(out)]
    )
    assert_user_error(
        call(capsys, *argv), f"cannot write output file {out}: No space left on device"
    )
    assert not out.exists()


def test_read_only_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path
) -> None:
    import errno

    out = tmp_path / "ro" / "out.ll"
    _failing_open(monkeypatch, out, errno.EROFS)
    result = call(capsys, "compile", str(tiny), "--emit", "graph", "-o", str(out))
    assert_user_error(result, f"cannot write output file {out}: Read-only file system")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["run", "compile"])
def test_dev_full(tiny: Path, tmp_path: Path, command: str) -> None:
    """A really full device, as an output file and as standard output."""
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    argv = (
        ["run", str(tiny), "--inputs", str(inputs), "--output"]
        if command == "run"
        else ["compile", str(tiny), "--emit", "graph", "-o"]
    )
    r = run_cli(*argv, "/dev/full")
    assert (r.returncode, r.stderr) == (
        1,
        "ziggurat: error: cannot write output file /dev/full: No space left on device\n",
    )
    assert Path("/dev/full").exists() and not Path("/dev/full.npz").exists()
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [*ziggurat_cmd(), *argv[:-1]]
            if command == "compile"
            else [*ziggurat_cmd(), *argv, str(tmp_path / "o.npz")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=300,
        )
    assert (r.returncode, r.stderr) == (
        1,
        "ziggurat: error: cannot write to standard output: No space left on device\n",
    )


# -- --input-shape and --emit -----------------------------------------------------------------


@pytest.mark.parametrize("spec", ["x=1x3xfoo", "x", "=1x3x4x4", "x=1x3x0x4", "x=1x3x-4x4", "x="])
def test_bad_input_shape_syntax(capsys: pytest.CaptureFixture[str], tiny: Path, spec: str) -> None:
    assert_user_error(
        call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", spec),
        f"bad --input-shape '{spec}': expected NAME=D1xD2x... (or D1,D2,...) with positive dims",
    )


def test_input_shape_unknown_name(capsys: pytest.CaptureFixture[str], tiny: Path) -> None:
    assert_user_error(
        call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", "bogus=1x3x4x4"),
        "unknown input 'bogus' (model inputs: 'x')",
    )


@pytest.mark.parametrize("spec", ["x=1x3x8x8", "x=1,3,8,8", "x=1X3,8x8"])
def test_input_shape_takes_x_or_commas(
    capsys: pytest.CaptureFixture[str], tiny: Path, spec: str
) -> None:
    """The importer's error suggests comma-separated sizes; both spellings are one shape."""
    rc, out, err = call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", spec)
    assert rc == 0, err
    assert "tensor<1x3x8x8xf32>" in out


@pytest.fixture(scope="module")
def symbolic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """x -> relu(x) with x: [batch, seq, 4] (two symbolic dims)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "sym", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    path = tmp_path_factory.mktemp("symbolic") / "symbolic.onnx"
    onnx.save(m, path)
    return path


def run_with_dims(
    capsys: pytest.CaptureFixture[str], model: Path, x: np.ndarray, tmp_path: Path, *flags: str
) -> tuple[int, str, str]:
    """`run MODEL --dim seq=1..8 FLAGS` on x."""
    inputs = npz(tmp_path / "in.npz", x=x)
    out = str(tmp_path / "out.npz")
    return call(
        capsys,
        "run",
        str(model),
        "--dim",
        "seq=1..8",
        "--inputs",
        str(inputs),
        "--output",
        out,
        *flags,
    )


def test_run_takes_symbolic_sizes_from_the_inputs(
    capsys: pytest.CaptureFixture[str], symbolic: Path, tmp_path: Path
) -> None:
    for shape in [(1, 5, 4), (3, 2, 4)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        rc, out, err = run_with_dims(capsys, symbolic, x, tmp_path, "--no-cache")
        assert rc == 0, err
        with np.load(tmp_path / "out.npz") as data:
            np.testing.assert_array_equal(data["y"], np.maximum(x, 0))


def test_run_refuses_a_size_out_of_dim_bounds(
    capsys: pytest.CaptureFixture[str], symbolic: Path, tmp_path: Path
) -> None:
    x = np.zeros((1, 9, 4), np.float32)
    assert_user_error(
        run_with_dims(capsys, symbolic, x, tmp_path),
        "symbol 'seq' is 9 in input 'x' (axis 1), outside the bounds 1..8",
    )


def test_compile_dim_fixes_symbols(capsys: pytest.CaptureFixture[str], symbolic: Path) -> None:
    rc, out, err = call(
        capsys, "compile", str(symbolic), "--emit", "graph", "--dim", "batch=2", "--dim", "seq=3"
    )
    assert rc == 0, err
    assert "tensor<2x3x4xf32>" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--dim", "seq=1..4"],
            "--dim seq=LO..HI: this compiles one shape; fix it with --dim seq=N",
        ),
        (["--dim", "seq=x"], "bad --dim 'seq=x': expected NAME=N, NAME=LO..HI or NAME=LO.."),
        (["--dim", "seq=4..2"], "bad --dim 'seq=4..2'"),
        (
            ["--dim", "len=3"],
            "dims names 'len', which the model's inputs do not have; its "
            "symbols are 'batch', 'seq'",
        ),
    ],
)
def test_compile_bad_dims(
    capsys: pytest.CaptureFixture[str], symbolic: Path, args: list[str], message: str
) -> None:
    assert_user_error(call(capsys, "compile", str(symbolic), "--emit", "graph", *args), message)


def test_run_takes_a_zoo_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`run zoo:NAME` as compile, bench and tune take it (it once said "model file not found")."""
    import onnxruntime as ort

    proto = zoo.model_from_arg("zoo:mlp")
    feeds = zoo.random_inputs(proto)
    inputs = npz(tmp_path / "in.npz", **feeds)
    rc, out, err = call(
        capsys, "run", "zoo:mlp", "--inputs", str(inputs), "--output", str(tmp_path / "o.npz")
    )
    assert rc == 0, err
    ref = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = ref.run(None, feeds)
    with np.load(tmp_path / "o.npz") as data:
        (got,) = [data[k] for k in data.files]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_unknown_emit_level(tiny: Path) -> None:
    r = run_cli("compile", str(tiny), "--emit", "mlir")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("usage: ziggurat compile")
    assert "ziggurat compile: error: argument --emit: invalid choice: 'mlir'" in r.stderr


def test_unknown_zoo_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(
        call(capsys, "bench", "zoo:alexnet"), "unknown built-in model 'alexnet' (available: mlp, "
    )


# -- compile --emit on the small CNN --------------------------------------------------------------

EMIT_EXPECT = {
    "graph": r"graph\.conv_nchwc ",
    "tensor": r"linalg\.generic ",
    "loops": r"(?s)scf\.for .*vector\.fma ",  # an FMA after (inside) a loop header
    "llvm-dialect": r"llvm\.func @main\(",
    "llvm-ir": r"(?m)^define .*@main\(",
    "asm": r"vfmadd\w+\s+[^\n]*%[zy]mm",
}


@pytest.mark.parametrize("level", list(EMIT_EXPECT))
def test_emit_level(capsys: pytest.CaptureFixture[str], cnn: Path, level: str) -> None:
    rc, out, err = call(capsys, "compile", str(cnn), "--emit", level)
    assert rc == 0, err
    assert re.search(EMIT_EXPECT[level], out), f"{level}: no match for {EMIT_EXPECT[level]!r}"
    if level != "graph":
        assert "graph." not in out


def test_emit_to_file(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "tiny.ll"
    rc, stdout, err = call(capsys, "compile", str(tiny), "--emit", "llvm-ir", "-o", str(out))
    assert rc == 0, err
    assert stdout == ""
    assert "define" in out.read_text()


def test_input_shape_overrides_static_shape(capsys: pytest.CaptureFixture[str], tiny: Path) -> None:
    rc, out, err = call(
        capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", "x=1x3x8x8"
    )
    assert rc == 0, err
    assert "tensor<1x3x8x8xf32>" in out


@pytest.mark.skipif(
    os.environ.get("ZIGGURAT_DEMO_CHECKED") == "1",
    reason=".ci/run ran the README's demo command in a fresh venv just before",
)
def test_demo_matches_onnxruntime() -> None:
    r = run_cli("demo")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "matches onnxruntime" in ln)
    assert line.split()[-1] == "yes"


# -- `ziggurat tune` and `--db` (subprocesses, a single-node 64x64 MatMul model) -------------

HAS_MPL = importlib.util.find_spec("matplotlib") is not None
needs_xgboost = pytest.mark.skipif(
    importlib.util.find_spec("xgboost") is None, reason="the tuner's cost model needs xgboost"
)
DB_LINE = re.compile(
    r"ziggurat: (\d+) of (\d+) kernels use tuned schedules; (\d+) fell back to the default schedule"
    r" \(no record\), (\d+) keep it \(no record beat it\)"
)


def matmul_model(path: Path, n: int = 64) -> Path:
    onnx.save(zoo.matmul(n), path)
    return path


def complete_lines(path: Path) -> list[bytes]:
    """The newline-terminated lines (a torn last line, if any, is not one)."""
    data = path.read_bytes() if path.exists() else b""
    return data.split(b"\n")[:-1]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("tune")
    model = matmul_model(d / "mm.onnx")
    db, png = d / "db.jsonl", d / "curves.png"
    plot = ["--plot", png] if HAS_MPL else []
    r = run_cli("tune", model, "--trials", "6", "--db", db, "--seed", "1", *plot)
    return {"dir": d, "model": model, "db": db, "png": png, "result": r}


@needs_xgboost
def test_tune_prints_progress_and_summary(tuned: dict) -> None:
    r = tuned["result"]
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    # not a terminal: plain progress lines (autotune/progress.py), the last one the task's end
    assert "\r" not in r.stderr, r.stderr
    progress = [line for line in r.stderr.splitlines() if line.startswith("tune: ")]
    assert progress, r.stderr
    for piece in ("6/6 trials", "task 1/1", "best", "GFLOP/s", "left"):
        assert piece in progress[-1], progress
    header, *rows = [line for line in r.stdout.splitlines() if line.strip() and "->" not in line]
    assert re.search(r"task\s+weight\s+trials\s+best GFLOP/s\s+latency us\s+vs default", header), (
        r.stdout
    )
    assert len(rows) == 1 and rows[0].startswith("matmul 64x64 k64"), r.stdout
    row = re.search(r"(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+\.\d\dx)( \(kept\))?$", rows[0])
    assert row, rows[0]
    weight, trials, gflops, _, vs, kept = row.groups()
    assert (weight, trials) == ("1", "6") and float(gflops) > 0, rows[0]
    assert kept is None or float(vs[:-1]) >= 1.0, rows[0]  # timed beside the default
    records = [json.loads(line) for line in complete_lines(tuned["db"])]
    assert len(records) == 6 and tuned["db"].read_bytes().endswith(b"\n")


@needs_xgboost
@pytest.mark.skipif(not HAS_MPL, reason="--plot needs matplotlib (pip install 'ziggurat[tune]')")
def test_tune_plot_writes_a_png(tuned: dict) -> None:
    assert tuned["result"].returncode == 0, tuned["result"].stderr
    assert f"tuning curves -> {tuned['png']}" in tuned["result"].stdout
    data = tuned["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


@needs_xgboost
def test_run_with_the_database_uses_tuned_schedules_and_matches_onnxruntime(tuned: dict) -> None:
    import onnxruntime as ort

    assert tuned["result"].returncode == 0, tuned["result"].stderr
    d = tuned["dir"]
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal((64, 64), dtype=np.float32) for k in ("a", "b")}
    np.savez(d / "in.npz", **feeds)
    r = run_cli(
        "run",
        tuned["model"],
        "--inputs",
        d / "in.npz",
        "--output",
        d / "out.npz",
        "--db",
        tuned["db"],
    )
    assert r.returncode == 0, r.stderr
    m = DB_LINE.search(r.stderr)
    assert m, r.stderr
    tuned_n, total, fallback, kept = map(int, m.groups())
    assert tuned_n + fallback + kept == total == 1 and fallback == 0, r.stderr
    # applied unless no record was faster than the default schedule timed beside it
    assert kept == ("(kept)" in tuned["result"].stdout), (r.stderr, tuned["result"].stdout)
    (ref,) = ort.InferenceSession(str(tuned["model"]), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )
    with np.load(d / "out.npz") as out:
        np.testing.assert_allclose(out["y"], ref, rtol=1e-4, atol=1e-5)


@needs_xgboost
def test_run_with_an_empty_database_falls_back_everywhere(tuned: dict, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.savez(
        tmp_path / "in.npz",
        a=rng.standard_normal((64, 64), dtype=np.float32),
        b=rng.standard_normal((64, 64), dtype=np.float32),
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = run_cli(
        "run",
        tuned["model"],
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        tmp_path / "out.npz",
        "--db",
        empty,
    )
    assert r.returncode == 0, r.stderr
    assert (
        "ziggurat: 0 of 1 kernels use tuned schedules; 1 fell back to the default schedule"
        in r.stderr
    )


@needs_xgboost
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_run_with_a_bad_database_path_is_a_clear_error(
    tuned: dict, tmp_path: Path, kind: str
) -> None:
    """A mistyped --db must not silently run untuned: one `error:` line, exit 1, no traceback."""
    db = tmp_path / "no-such-db.jsonl"
    if kind == "directory":
        db.mkdir()
    np.savez(tmp_path / "in.npz", a=np.ones((64, 64), np.float32), b=np.ones((64, 64), np.float32))
    r = run_cli(
        "run",
        tuned["model"],
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        tmp_path / "out.npz",
        "--db",
        db,
    )
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert "ziggurat: error:" in r.stderr and str(db) in r.stderr, r.stderr
    assert ("not found" if kind == "missing" else "directory") in r.stderr, r.stderr
    if kind == "missing":
        assert not db.exists()  # reading a database never creates it


NOT_REGULAR = {
    "fifo": "a FIFO (named pipe)",
    "/dev/zero": "a character device",
    "directory": "a directory",
}


@pytest.mark.parametrize("command", ["run", "compile"])
@pytest.mark.parametrize("kind", list(NOT_REGULAR))
def test_a_db_that_is_not_a_regular_file_is_a_clear_error(
    tiny: Path, tmp_path: Path, kind: str, command: str
) -> None:
    """A FIFO blocked the open forever and /dev/zero was read until memory ran out: refused as
    the model and input paths are, at once, in one `error:` line. `run` takes the layout from
    --db; `compile --layout` leaves --db to the schedules' pass."""
    db = tmp_path / "db.jsonl"
    if kind == "fifo":
        os.mkfifo(db)
    elif kind == "directory":
        db.mkdir()
    else:
        db = Path(kind)
    inputs = npz(tmp_path / "in.npz", x=np.ones((1, 3, 4, 4), np.float32))
    out = tmp_path / "out.npz"
    argv = {
        "run": ["run", tiny, "--inputs", inputs, "--output", out, "--db", db],
        "compile": ["compile", tiny, "--emit", "loops", "--layout", "NCHW", "--db", db],
    }[command]
    r = run_cli(*argv, timeout=120)  # a hang guard
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("ziggurat: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert f"database {db} is {NOT_REGULAR[kind]}, not a" in r.stderr, r.stderr
    assert r.stdout == "" and not out.exists()


@needs_xgboost
def test_tune_killed_with_sigkill_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    model = matmul_model(tmp_path / "mm.onnx")
    db = tmp_path / "db.jsonl"
    proc = subprocess.Popen(
        [*ziggurat_cmd(), "tune", str(model), "--trials", "40", "--db", str(db)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 600  # a guard against a hang, not a speed limit
        while len(complete_lines(db)) < 5:
            assert proc.poll() is None, (
                f"tune ended before it was killed: {proc.stderr.read().decode()}"
            )
            assert time.monotonic() < deadline, "no 5 records within 600 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = complete_lines(db)
    assert 5 <= len(before) < 40
    old = [json.loads(line) for line in before]  # every complete line is a whole record

    r = run_cli("tune", model, "--trials", "8", "--db", db)
    assert r.returncode == 0, r.stderr
    data = db.read_bytes()
    assert data.endswith(b"\n"), "torn last line"
    after = [json.loads(line) for line in data.split(b"\n")[:-1]]
    assert after[: len(old)] == old, "a record measured before the kill was lost or changed"
    assert len(after) == len(old) + 8, (len(old), len(after))
    keys = [(r["workload_key"], json.dumps(r["config"], sort_keys=True)) for r in after]
    assert len(set(keys)) == len(keys), "a config was measured twice"


@needs_xgboost
def test_tune_for_two_threads_then_run_with_them(tmp_path: Path) -> None:
    """--threads 2 tunes the parallel knob (records say so) and run --threads 2 applies them."""
    model = matmul_model(tmp_path / "mm.onnx", n=128)
    db = tmp_path / "db.jsonl"
    r = run_cli("tune", model, "--trials", "6", "--db", db, "--threads", "2", "--transfer")
    assert r.returncode == 0, r.stderr
    assert "on 2 thread(s) with transfer learning" in r.stderr
    records = [json.loads(line) for line in complete_lines(db)]
    assert len(records) == 6 and all("parallel" in rec["config"] for rec in records)
    assert any(rec["config"]["parallel"] for rec in records)
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal((128, 128)).astype(np.float32),
        rng.standard_normal((128, 128)).astype(np.float32),
    )
    np.savez(tmp_path / "in.npz", a=a, b=b)
    r = run_cli(
        "run",
        model,
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        tmp_path / "out.npz",
        "--db",
        db,
        "--threads",
        "2",
    )
    assert r.returncode == 0, r.stderr
    m = DB_LINE.search(r.stderr)  # the two-thread record applies, or the default it lost to
    assert m and m[3] == "0" and int(m[1]) + int(m[4]) == 1, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], a @ b, rtol=1e-4, atol=1e-4)


@needs_xgboost
@pytest.mark.parametrize("command", ["tune", "bench", "run", "compile"])
def test_bad_thread_count_is_a_clear_error(command: str, tmp_path: Path) -> None:
    model = matmul_model(tmp_path / "mm.onnx")
    extra = {
        "tune": ["--trials", "1", "--db", tmp_path / "db.jsonl"],
        "run": ["--inputs", "x.npz", "--output", "y.npz"],
    }
    r = run_cli(command, model, "--threads", "0", *extra.get(command, []))
    assert r.returncode == 1 and "--threads must be at least 1 (got 0)" in r.stderr


MOVES = ("elementwise", "fill")


def test_bench_profile(capsys: pytest.CaptureFixture[str], cnn: Path) -> None:
    """`bench --profile N`: the N slowest kernel calls after the comparison; in the JSON, every
    call in call order."""
    import json

    rc, out, err = call(capsys, "bench", str(cnn), "--seconds", "0.05", "--profile", "2")
    assert rc == 0, err
    assert "ratio" in out and "kernel calls" in out and "by kind:" in out
    assert "more)" in out  # only the two slowest are listed
    rc, out, err = call(capsys, "bench", str(cnn), "--seconds", "0.05", "--profile", "--json")
    assert rc == 0, err
    profile = json.loads(out)["profile"]
    assert profile["fma_peak_gflops"] > 0
    kernels = profile["kernels"]
    # the computing kernels in call order (around them: the input's and the pooled result's
    # layout transforms, the padded input's border)
    assert [k["what"].split()[0] for k in kernels if k["what"].split()[0] not in MOVES] == [
        "conv", "conv", "conv", "pool", "reduce", "matmul"
    ]  # fmt: skip
    assert {k["what"].split()[0] for k in kernels} <= {"conv", "pool", "reduce", "matmul", *MOVES}


def test_bench_profile_usage_errors(capsys: pytest.CaptureFixture[str], cnn: Path) -> None:
    assert_user_error(
        call(capsys, "bench", str(cnn), "--profile", "--target", "opencl"),
        "--profile times kernels on the CPU target only",
    )
    assert_user_error(
        call(capsys, "bench", str(cnn.parent), "--profile"),
        "--profile applies to one model, not a directory",
    )
    assert_user_error(
        call(capsys, "bench", str(cnn), "--profile", "-1"), "--profile N must be at least 0"
    )


# -- the convolutions' layout ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "present", "absent"),
    [
        ("NCHW", "graph.conv ", "graph.conv_nchwc"),
        ("NCHW8c", '"NCHW8c"', "graph.conv "),
        ("NCHW4c", '"NCHW4c"', "graph.conv "),
    ],
)
def test_compile_layout_option(
    capsys: pytest.CaptureFixture[str], layout: str, present: str, absent: str
) -> None:
    rc, out, err = call(capsys, "compile", "zoo:small-cnn", "--emit", "graph", "--layout", layout)
    assert rc == 0, err
    assert present in out and absent not in out


def test_layout_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert_user_error(
        call(capsys, "compile", "zoo:small-cnn", "--emit", "opencl", "--layout", "NCHW16c"),
        "--layout NCHW16c is for the CPU; GPU kernels read NCHW",
    )
    onnx.save(zoo.small_cnn(), tmp_path / "cnn.onnx")
    assert_user_error(
        call(capsys, "bench", str(tmp_path), "--layout", "NCHW"),
        "--layout applies to one model",
    )
    rc, _, err = call(capsys, "compile", "zoo:small-cnn", "--layout", "NHWC")
    assert rc == 1 and "invalid choice: 'NHWC'" in err


@needs_xgboost
def test_tune_searches_the_layout_and_bench_applies_it(tmp_path: Path) -> None:
    """`tune` times the candidate layouts first and tunes the fastest one's kernels; `bench
    --db` then compiles in that layout unless --layout says otherwise."""
    db = tmp_path / "db.jsonl"
    r = run_cli("tune", "zoo:small-cnn", "--trials", "4", "--db", db)
    assert r.returncode == 0, r.stderr
    assert "layout: whole-model latency at 1 thread(s)" in r.stderr, r.stderr
    chosen = re.search(r"layout: tuning the kernels of (\S+)", r.stderr)
    assert chosen, r.stderr
    records = [json.loads(line) for line in complete_lines(db)]
    layouts = [rec for rec in records if rec["workload_key"].startswith("layout:")]
    assert len(layouts) == 3 and len(records) == 3 + 4
    r = run_cli("bench", "zoo:small-cnn", "--db", db, "--seconds", "0.05")
    assert r.returncode == 0, r.stderr
    assert f"layout {chosen[1]}, as tuned in" in r.stderr
    assert re.search(rf"^layout\s+{chosen[1]}$", r.stdout, re.M), r.stdout
    r = run_cli("bench", "zoo:small-cnn", "--db", db, "--seconds", "0.05", "--layout", "NCHW")
    assert r.returncode == 0 and "as tuned in" not in r.stderr, r.stderr
    assert re.search(r"^layout\s+NCHW$", r.stdout, re.M), r.stdout
    # a directory of models benched with the database: each model in its own tuned layout
    models = tmp_path / "models"
    models.mkdir()
    onnx.save(zoo.small_cnn(), models / "cnn.onnx")
    r = run_cli("bench", models, "--db", db, "--seconds", "0.05", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["runs"]["1"]["layout"] == chosen[1], row  # tuned at one thread
    assert row["runs"]["2"]["layout"] == "auto", row  # nothing tuned at two


@needs_xgboost
def test_tune_of_a_model_without_convolutions_skips_the_layout_search(tuned: dict) -> None:
    assert "layout: no convolution to lay out" in tuned["result"].stderr


def closed_loopback_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound, then let go)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None, reason="--dask needs dask.distributed"
)
@pytest.mark.parametrize("where", ["inproc", "closed port"])
def test_tune_with_no_dask_scheduler_there_is_one_error_line(tmp_path: Path, where: str) -> None:
    """An inproc:// address printed an error, then blocked two minutes at exit and printed a
    traceback; a refused loopback port was reported only after the minute of retries."""
    address = (
        "inproc://nothing" if where == "inproc" else f"tcp://127.0.0.1:{closed_loopback_port()}"
    )
    db = tmp_path / "db.jsonl"
    argv = ["tune", "zoo:mlp", "--db", db, "--trials", "4", "--dask", address]
    r = run_cli(*argv, timeout=600)  # a hang guard (the old code failed on its messages)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert r.stderr.count("error:") == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ziggurat: error: ") and address in last, r.stderr
    why = "no dask scheduler at" if where == "inproc" else "connection refused"
    assert why in last, r.stderr
    assert not db.exists()  # nothing was measured
