"""Bad input to `ziggurat-opt` and `ziggurat` ends in one clear `error:` line, never in a Python
traceback or an "internal error ... this is a bug" (issue 28, points 5 and 6).

- every registered pass on IR of every level (`ziggurat compile zoo:mlp --emit LEVEL`): it runs,
  or it says what level it expects (the schedule passes before bufferize, bufferize before
  convert-graph-to-linalg); a construct a pass does not implement names the pass;
- regions, attributes and types nested deeper than the parser can follow: the line where it gave
  up; nesting it can follow still works;
- an output file on a full disk (/dev/full) names the file and the OS error;
- out-of-range pass options (sizes past int32, widths that are no power of two, unknown Winograd
  tiles and layout blocks, negative limits, a tuning database that is /etc/passwd) name the pass,
  the option and what is allowed, on any input;
- out-of-range command-line numbers (`bench --seconds -1`, `--seed -1`) are argparse errors.

ziggurat-opt and ziggurat run in-process (tests.support.schedule_options.run_opt,
tests/compiler/cli/test_main.py's style), except where the process's own exit matters.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from xdsl.parser import Parser

from compiler.cli.main import main as ziggurat_main
from compiler.cli.universe import PASSES
from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from tests.support import REPO_ROOT
from tests.support.schedule_options import EMPTY_MODULE, run_opt

LEVELS = ("graph", "tensor", "buffers", "loops")


def call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`ziggurat ARGV` in this process: (exit code, stdout, stderr)."""
    try:
        rc = ziggurat_main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def assert_clean(rc: int, err: str) -> None:
    """Success, or exit code 1 with an `error:` line; never a traceback or an internal error."""
    assert "Traceback" not in err and "internal error" not in err and "this is a bug" not in err
    assert rc in (0, 1), (rc, err)
    if rc:
        assert "error: " in err, err


def one_error(rc: int, err: str) -> str:
    """The one `error:` line of a failed run (exit code 1, nothing like a traceback)."""
    assert_clean(rc, err)
    assert rc == 1, err
    lines = [line for line in err.splitlines() if "error: " in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def levels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """zoo:mlp at each level, as `ziggurat compile zoo:mlp --emit LEVEL -o FILE` writes it."""
    folder = tmp_path_factory.mktemp("levels")
    files = {}
    for level in LEVELS:
        files[level] = folder / f"mlp_{level}.mlir"
        assert ziggurat_main(["compile", "zoo:mlp", "--emit", level, "-o", str(files[level])]) == 0
    return files


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.mlir"
    path.write_text(EMPTY_MODULE)
    return path


# -- every pass on every level -----------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("pass_name", sorted(PASSES))
def test_every_pass_on_every_level_runs_or_says_why(
    capsys: pytest.CaptureFixture[str], levels: dict[str, Path], pass_name: str, level: str
) -> None:
    rc, _, err = run_opt(capsys, str(levels[level]), "-p", pass_name)
    assert_clean(rc, err)


SCHEDULE_PASSES = (
    "default-schedule",
    "interchange",
    "pack",
    "parallelize",
    "split-reduction",
    "tile",
    "unroll-jam",
    "vectorize",
)


@pytest.mark.parametrize("pass_name", SCHEDULE_PASSES)
def test_schedule_passes_on_tensors_name_the_level_they_expect(
    capsys: pytest.CaptureFixture[str], levels: dict[str, Path], pass_name: str
) -> None:
    """They crashed with KernelAnalysisError ("operand #0 is not a memref"): the error is at
    the first linalg.generic, and says to bufferize first."""
    line = one_error(*run_opt(capsys, str(levels["tensor"]), "-p", pass_name)[::2])
    assert f"error: 'linalg.generic' op {pass_name}: expects buffer-level IR" in line, line
    assert "run bufferize first" in line and "is on tensors (operand #0: tensor<" in line, line
    assert line.startswith(f"{levels['tensor']}:"), line  # located at the op's line


def test_bufferize_on_the_graph_level_names_the_level_it_expects(
    capsys: pytest.CaptureFixture[str], levels: dict[str, Path]
) -> None:
    line = one_error(*run_opt(capsys, str(levels["graph"]), "-p", "bufferize")[::2])
    assert "op bufferize: expects tensor-level IR" in line, line
    assert "run convert-graph-to-linalg first" in line, line


MULTI_RESULT = """\
func.func @f(%a: i32) -> (i32, i32) {
  func.return %a, %a : i32, i32
}
"""


def test_a_construct_a_pass_does_not_implement_names_the_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """NotImplementedError out of a pass: the input's limit, not a bug (ziggurat-opt and the
    model API's pass runner alike)."""
    path = tmp_path / "multi.mlir"
    path.write_text(MULTI_RESULT)
    rc, _, err = run_opt(capsys, str(path), "-p", "convert-func-to-llvm")
    line = one_error(rc, err)
    assert "error: pass 'convert-func-to-llvm' does not support this input: " in line, err
    assert "note: pass 'convert-func-to-llvm' failed" in err
    ctx = make_context()
    with pytest.raises(CompileError, match="pass 'convert-func-to-llvm' does not support"):
        run_passes(ctx, Parser(ctx, MULTI_RESULT).parse_module(), ["convert-func-to-llvm"])


# -- nesting -------------------------------------------------------------------------------


def nested(kind: str, depth: int) -> str:
    if kind == "regions":
        body = "func.func @f() {\n  func.return\n}\n"
        return "builtin.module {\n" * depth + body + "}\n" * depth
    if kind == "attributes":
        return f'"test.op"() {{a = {"[" * depth}1{"]" * depth}}} : () -> ()\n'
    inner = "tuple<" * depth + "i32" + ">" * depth
    return f"func.func @f(%a: {inner}) {{\n  func.return\n}}\n"


@pytest.mark.parametrize("kind", ["regions", "attributes", "types"])
def test_nesting_too_deep_for_the_parser_is_one_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """It was a RecursionError ("internal error while parsing"); nesting that the parser can
    follow still round-trips."""
    path = tmp_path / f"{kind}.mlir"
    path.write_text(nested(kind, 20))
    rc, out, err = run_opt(capsys, str(path), "--allow-unregistered-dialect", "-p", "cse")
    assert rc == 0 and err == "", err
    shown = {"regions": "builtin.module {\n" * 20, "attributes": "[" * 20, "types": "tuple<" * 20}
    assert shown[kind] in out.replace("  ", ""), out
    for depth in (1000, 100_000):
        path.write_text(nested(kind, depth))
        rc, out, err = run_opt(capsys, str(path), "--allow-unregistered-dialect", "-p", "cse")
        line = one_error(rc, err)
        assert line.startswith(f"{path}:") and "error: nesting too deep: " in line, err
        assert out == ""


# -- output --------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_output_file_on_a_full_disk_is_one_error_line(
    capsys: pytest.CaptureFixture[str], empty: Path
) -> None:
    """ziggurat-opt raised OSError (ENOSPC) as an internal error; ziggurat compile names the file
    too."""
    for argv in (
        [str(empty), "-o", "/dev/full"],
        [str(empty), "--split-input-file", "-o", "/dev/full"],
    ):
        line = one_error(*run_opt(capsys, *argv)[::2])
        assert line == (
            "ziggurat-opt: error: could not write output file '/dev/full': No space left on device"
        ), line
    line = one_error(*call(capsys, "compile", "zoo:mlp", "--emit", "graph", "-o", "/dev/full")[::2])
    assert "/dev/full" in line and "No space left on device" in line, line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_standard_output_on_a_full_disk_is_one_error_line(empty: Path) -> None:
    """As a process: nothing more at exit (the interpreter's own flush of stdout)."""
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "compiler.cli.opt", str(empty)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
            timeout=600,
        )
    assert r.returncode == 1, r.stderr
    assert r.stderr == (
        "ziggurat-opt: error: could not write to standard output: No space left on device\n"
    )


# -- pass options --------------------------------------------------------------------------

BAD_OPTIONS = [
    # (pipeline, the error after "error: ", the nearest pipeline that is fine): each bad one
    # was accepted on every input, or crashed
    (
        "tile{sizes=2147483648}",
        "tile: option 'sizes': 2147483648 (loop 0) is out of range",
        "tile{sizes=2147483647}",
    ),
    (
        "unroll-jam{factors=1,2147483648}",
        "unroll-jam: option 'factors': 2147483648 (loop 1)",
        "unroll-jam{factors=1,2147483647}",
    ),
    (
        "vectorize{width=3}",
        "vectorize: option 'width': 3 is out of range; allowed: a power of two",
        "vectorize",  # width omitted: the host's widest
    ),
    (
        "vectorize{width=0}",
        "vectorize: option 'width': 0 is out of range; allowed: 1..64",
        "vectorize{width=1}",
    ),
    (
        "vectorize{dim=0 width=12}",
        "vectorize: option 'width': 12 is out of range",
        "vectorize{dim=0 width=64}",
    ),
    (
        "default-schedule{width=6}",
        "default-schedule: option 'width': 6 is out of range",
        "default-schedule{width=4}",
    ),
    (
        "split-reduction{threads=2147483648}",
        "split-reduction: option 'threads': 2147483648 is",
        "split-reduction{threads=2147483647}",
    ),
    (
        "winograd{tile=3}",
        "winograd: option 'tile': 3 is out of range; allowed: -1 (none), 0",
        "winograd{tile=4}",
    ),
    ("winograd{tile=-2}", "winograd: option 'tile': -2 is out of range", "winograd{tile=-1}"),
    (
        "blocked-layout{block=3}",
        "blocked-layout: option 'block': 3 is out of range",
        "blocked-layout{block=4}",
    ),
    (
        "blocked-layout{block=-1}",
        "blocked-layout: option 'block': -1 is out of range",
        "blocked-layout{block=0}",
    ),
    (
        "blocked-layout{block=128}",
        "blocked-layout: option 'block': 128 is out of range",
        "blocked-layout{block=64}",
    ),
    (
        "fold-constants{max-elements=-1}",
        "fold-constants: option 'max-elements': -1 is out of",
        "fold-constants{max-elements=0}",
    ),
    (
        "fuse-ops{max-group-size=0}",
        "fuse-ops: option 'max-group-size': 0 is out of range",
        "fuse-ops{max-group-size=1}",
    ),
    (
        "fuse-ops{max-group-size=-1}",
        "fuse-ops: option 'max-group-size': -1 is out of range",
        "fuse-ops{max-group-size=2147483647}",
    ),
    (
        'bufferize{planner="best"}',
        "bufferize: option 'planner': unknown planner 'best'",
        'bufferize{planner="bump"}',
    ),
]


@pytest.mark.parametrize(
    ("pipeline", "message", "fine"), BAD_OPTIONS, ids=[p for p, _, _ in BAD_OPTIONS]
)
def test_out_of_range_pass_options_are_one_error_on_any_input(
    capsys: pytest.CaptureFixture[str], empty: Path, pipeline: str, message: str, fine: str
) -> None:
    """On a module without kernels: the option alone is wrong. The limit itself is fine."""
    line = one_error(*run_opt(capsys, str(empty), "-p", pipeline)[::2])
    assert f"error: {message}" in line, line
    rc, _, err = run_opt(capsys, str(empty), "-p", fine)
    assert rc == 0, (fine, err)


PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (PASSWD, "line 1 is not JSON"),
        ("\n  \n[1, 2]\n", "line 3 is JSON, but not an object"),
        ("\x89PNG\r\n\x1a\n\x00\x00", "line 1 is not JSON"),
    ],
    ids=["passwd", "a-list", "binary"],
)
def test_a_tuning_database_that_is_no_database_is_refused(
    capsys: pytest.CaptureFixture[str], empty: Path, tmp_path: Path, text: str, why: str
) -> None:
    """`autotune{db=/etc/passwd}` skipped every line with a warning and went on (with trials, it
    would have appended records to the file); `tune --db` too. The file is left as it was."""
    db = tmp_path / "passwd"
    db.write_bytes(text.encode("latin-1"))
    for trials in (0, 1):
        rc, _, err = run_opt(capsys, str(empty), "-p", f'autotune{{db="{db}" trials={trials}}}')
        line = one_error(rc, err)
        assert f"error: autotune: {db} is not a tuning database (JSON lines" in line, line
        assert line.endswith(why), line
    line = one_error(*call(capsys, "tune", "zoo:mlp", "--trials", "1", "--db", str(db))[::2])
    expected = f"{db} is not a tuning database (JSON lines, one record object each): {why}"
    assert line == f"ziggurat: error: {expected}", line
    assert db.read_bytes() == text.encode("latin-1")
    # blank lines first, then a record; a torn first record (a writer killed mid-append): a
    # database still
    for fine in ('\n\n{"workload_key": "ab"}\n', '{"workload_key": "ab'):
        db.write_text(fine)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the database's own notes on such records
            rc, _, err = run_opt(capsys, str(empty), "-p", f'autotune{{db="{db}"}}')
        assert rc == 0, err


# -- command-line numbers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "zoo:mlp", "--seconds", "-1"], "argument --seconds: must be a positive number"),
        (["bench", "zoo:mlp", "--seconds", "0"], "argument --seconds: must be a positive number"),
        (["bench", "zoo:mlp", "--seconds", "nan"], "argument --seconds: must be a positive"),
        (["bench", "zoo:mlp", "--seconds", "inf"], "argument --seconds: must be a positive"),
        (["demo", "--seed", "-1"], "argument --seed: must be 0 or more (got -1)"),
        (["demo", "--trials", "-1"], "argument --trials: must be 0 or more (got -1)"),
        (
            ["tune", "zoo:mlp", "--trials", "1", "--db", "x.jsonl", "--seed", "-1"],
            "argument --seed: must be 0 or more (got -1)",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_out_of_range_command_line_numbers_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    line = one_error(*call(capsys, *argv)[::2])
    assert line.endswith(message) or message in line, line
