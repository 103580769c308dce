"""`ziggurat` as users meet it: every bad input ends in one clear `ziggurat: error:` line and exit
code 1, never a traceback; `compile --emit` prints each level; `demo` agrees with onnxruntime.

Most error cases call `compiler.cli.main` in-process (an escaping exception fails the test just as
a traceback would, and it saves a second of interpreter start-up per case); a few run the console
script as a subprocess to pin down the real exit code and stderr. `ziggurat-opt`'s own messages
are tested in test_opt.py; only the cases missing there are here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler import zoo
from compiler.cli import main

REPO = Path(__file__).resolve().parents[2]


def ziggurat_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ziggurat"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "compiler.cli"]


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ziggurat_cmd(), *args], capture_output=True, text=True, cwd=REPO, timeout=timeout)


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


def run_tiny(capsys: pytest.CaptureFixture[str], tiny: Path, inputs: Path, tmp_path: Path) -> tuple[int, str, str]:
    return call(capsys, "run", str(tiny), "--inputs", str(inputs), "--output", str(tmp_path / "out.npz"))


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
    assert_user_error(run_tiny(capsys, tmp_path / "nope.onnx", inputs, tmp_path), "model file not found:")


def test_non_onnx_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_text("this is not an ONNX model\n")
    assert_user_error(call(capsys, "compile", str(bad), "--emit", "graph"), f"{bad} is not a valid ONNX model")


def test_truncated_onnx_file(capsys: pytest.CaptureFixture[str], cnn: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.onnx"
    data = cnn.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert_user_error(call(capsys, "compile", str(cut), "--emit", "graph"), f"{cut} is not a valid ONNX model")


@pytest.fixture(scope="module")
def unsupported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid model with two operators ziggurat does not support."""
    k = helper.make_tensor("k", TensorProto.INT64, [1], [3])
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["v", "i"], name="my_topk"),
        helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="my_nms"),
    ]
    g = helper.make_graph(
        nodes,
        "unsupported",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4]),
        ],
        [
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 3]),
            helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3]),
        ],
        [k],
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
        "NonMaxSuppression (node 'my_nms'), TopK (node 'my_topk')\n"
    )


# -- bad inputs for `run` ---------------------------------------------------------------------


def test_unknown_input_name(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32), z=np.zeros(3, np.float32))
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path), "unknown input name(s) ['z']; the model's inputs are ['x']"
    )


def test_missing_input(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    assert_user_error(
        run_tiny(capsys, tiny, npz(tmp_path / "in.npz"), tmp_path), "missing input 'x' (shape [1, 3, 4, 4], float32)"
    )


def test_wrong_input_shape(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 5), np.float32))
    assert_user_error(
        run_tiny(capsys, tiny, inputs, tmp_path), "input 'x' has shape [1, 3, 4, 5]; the model expects [1, 3, 4, 4]"
    )


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_wrong_input_dtype(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path, dtype: str) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), dtype))
    assert_user_error(run_tiny(capsys, tiny, inputs, tmp_path), f"input 'x' has dtype {dtype}; the model expects float32")


def test_missing_inputs_file(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    assert_user_error(
        run_tiny(capsys, tiny, tmp_path / "nope.npz", tmp_path), f"inputs file not found: {tmp_path / 'nope.npz'}"
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

    import compiler.cli as cli

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
        assert_user_error(call(capsys, *argv, "--threads", threads), f"--threads must be {message} (got {threads})")


def test_bench_missing_model_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression: `bench` loaded the model itself and died with an internal FileNotFoundError."""
    assert_user_error(call(capsys, "bench", str(tmp_path / "nope.onnx")), f"model file not found: {tmp_path / 'nope.onnx'}")
    assert_user_error(call(capsys, "bench", str(tmp_path)), f"model file {tmp_path} is a directory")


def test_bench_model_file(capsys: pytest.CaptureFixture[str], tiny: Path) -> None:
    """`bench` loads a model file through the frontend's loader, as `compile` and `run` do."""
    import json

    rc, out, err = call(capsys, "bench", str(tiny), "--seconds", "0.05", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["model"] == "tiny" and result["max_abs_err"] == 0.0


@pytest.mark.parametrize("command", ["bench", "run", "compile"])
def test_unreadable_model_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path, command: str
) -> None:
    import errno

    _failing_open(monkeypatch, tiny, errno.EACCES)
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    argv = {"bench": ["bench", str(tiny)], "compile": ["compile", str(tiny), "--emit", "graph"],
            "run": ["run", str(tiny), "--inputs", str(inputs), "--output", str(tmp_path / "out.npz")]}[command]
    assert_user_error(call(capsys, *argv), f"cannot read model file {tiny}: Permission denied")


def test_unreadable_inputs_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path
) -> None:
    import errno

    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    _failing_open(monkeypatch, inputs, errno.EIO)
    assert_user_error(run_tiny(capsys, tiny, inputs, tmp_path), f"cannot read inputs file {inputs}: Input/output error")


def test_output_under_a_file_or_onto_a_directory(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    inputs = npz(tmp_path / "in.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    (tmp_path / "file.txt").write_text("")
    for out, why in [(tmp_path / "file.txt" / "out.npz", "Not a directory"), (tmp_path, "Is a directory")]:
        result = call(capsys, "run", str(tiny), "--inputs", str(inputs), "--output", str(out))
        assert_user_error(result, f"cannot write output file {out}: {why}")
        result = call(capsys, "compile", str(tiny), "--emit", "graph", "-o", str(out))
        assert_user_error(result, f"cannot write output file {out}: {why}")
    assert not (tmp_path.parent / f"{tmp_path.name}.npz").exists()  # numpy's suffix: not added


def test_run_output_is_written_exactly_where_named(capsys: pytest.CaptureFixture[str], tiny: Path, tmp_path: Path) -> None:
    """Regression: np.savez(path) appended `.npz`, so `--output out` wrote out.npz (and
    `--output /dev/full` succeeded by creating /dev/full.npz)."""
    x = np.ones((1, 3, 4, 4), np.float32)
    out = tmp_path / "result"
    rc, stdout, err = call(capsys, "run", str(tiny), "--inputs", str(npz(tmp_path / "in.npz", x=x)), "--output", str(out))
    assert rc == 0, err
    assert f"-> {out}" in stdout and not (tmp_path / "result.npz").exists()
    with np.load(out) as data:
        np.testing.assert_array_equal(data["y"], x)


@pytest.mark.parametrize("command", ["run", "compile"])
def test_full_disk_leaves_no_partial_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path, command: str
) -> None:
    import builtins
    import errno

    import compiler.cli as cli

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
    argv = ["run", str(tiny), "--inputs", str(inputs), "--output", str(out)] if command == "run" else [
        "compile", str(tiny), "--emit", "graph", "-o", str(out)]
    assert_user_error(call(capsys, *argv), f"cannot write output file {out}: No space left on device")
    assert not out.exists()


def test_read_only_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny: Path, tmp_path: Path) -> None:
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
    argv = ["run", str(tiny), "--inputs", str(inputs), "--output"] if command == "run" else [
        "compile", str(tiny), "--emit", "graph", "-o"]
    r = run_cli(*argv, "/dev/full")
    assert (r.returncode, r.stderr) == (1, "ziggurat: error: cannot write output file /dev/full: No space left on device\n")
    assert Path("/dev/full").exists() and not Path("/dev/full.npz").exists()
    with open("/dev/full", "w") as full:
        r = subprocess.run([*ziggurat_cmd(), *argv[:-1]] if command == "compile" else [*ziggurat_cmd(), *argv, str(tmp_path / "o.npz")],
                           stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=300)
    assert (r.returncode, r.stderr) == (1, "ziggurat: error: cannot write to standard output: No space left on device\n")


# -- --input-shape and --emit -----------------------------------------------------------------


@pytest.mark.parametrize("spec", ["x=1x3xfoo", "x", "=1x3x4x4", "x=1x3x0x4", "x=1x3x-4x4", "x="])
def test_bad_input_shape_syntax(capsys: pytest.CaptureFixture[str], tiny: Path, spec: str) -> None:
    assert_user_error(
        call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", spec),
        f"bad --input-shape '{spec}': expected NAME=D1xD2x... with positive dims",
    )


def test_input_shape_unknown_name(capsys: pytest.CaptureFixture[str], tiny: Path) -> None:
    assert_user_error(
        call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", "bogus=1x3x4x4"),
        "unknown input 'bogus' (model inputs: 'x')",
    )


def test_unknown_emit_level(tiny: Path) -> None:
    r = run_cli("compile", str(tiny), "--emit", "mlir")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("usage: ziggurat compile")
    assert "ziggurat compile: error: argument --emit: invalid choice: 'mlir'" in r.stderr


def test_unknown_zoo_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(call(capsys, "bench", "zoo:alexnet"), "unknown built-in model 'alexnet' (available: mlp, ")


# -- compile --emit on the small CNN --------------------------------------------------------------

EMIT_EXPECT = {
    "graph": r"graph\.conv ",
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
    rc, out, err = call(capsys, "compile", str(tiny), "--emit", "graph", "--input-shape", "x=1x3x8x8")
    assert rc == 0, err
    assert "tensor<1x3x8x8xf32>" in out


def test_demo_matches_onnxruntime() -> None:
    r = run_cli("demo")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "matches onnxruntime" in ln)
    assert line.split()[-1] == "yes"


# -- ziggurat-opt: what test_opt.py does not cover (our own passes and dialect, stdin locations) --


def opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compiler.opt", *args], input=stdin, capture_output=True, text=True, cwd=REPO, timeout=120
    )


GRAPH_ADD = """\
func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}
"""


def test_opt_unknown_option_of_our_pass() -> None:
    r = opt("-p", "tile{sizs=4}", stdin=GRAPH_ADD)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "unknown option 'sizs' for pass 'tile' (did you mean 'sizes'?)" in r.stderr


def test_opt_unknown_pass_suggests_ours() -> None:
    r = opt("-p", "convert-graph-to-linalgg", stdin=GRAPH_ADD)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "unknown pass 'convert-graph-to-linalgg' (did you mean 'convert-graph-to-linalg'" in r.stderr


def test_opt_malformed_graph_op_on_stdin_has_line_col() -> None:
    r = opt("-p", "convert-graph-to-linalg", stdin=GRAPH_ADD.replace("%x, %y :", "%x :"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert re.match(r"<stdin>:2:\d+: error: ", r.stderr), r.stderr
    assert "%a = graph.add %x :" in r.stderr.splitlines()[1]  # the offending line, then a caret
    assert r.stderr.splitlines()[2].strip().startswith("^")
