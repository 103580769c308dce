"""`ziggurat-opt` as users meet it: exit codes and messages, run as a subprocess."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.diagnostics import Diag
from compiler.expected_diagnostics import check_expectations, parse_expectations
from compiler.instrumentation import extract_reproducer
from compiler.pipelines import PipelineError, expand
from tests.support import REPO_ROOT

REPO = REPO_ROOT

VALID = """\
func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
"""


def opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the driver the way the console script does."""
    return subprocess.run(
        [sys.executable, "-m", "compiler.cli.opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.fixture
def valid(tmp_path: Path) -> Path:
    path = tmp_path / "valid.mlir"
    path.write_text(VALID)
    return path


def assert_clean_failure(r: subprocess.CompletedProcess[str], message: str) -> None:
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_runs_a_pipeline(valid: Path) -> None:
    r = opt(str(valid), "-p", "canonicalize")
    assert r.returncode == 0, r.stderr
    assert "arith.constant 3 : i32" in r.stdout
    assert r.stderr == ""


def test_reads_stdin() -> None:
    r = opt("-p", "cse", stdin=VALID)
    assert r.returncode == 0, r.stderr
    assert "func.func @f" in r.stdout


def test_help_describes_verify_diagnostics_as_it_behaves() -> None:
    """xDSL's help says the flag prints an exception and exits 0; ours checks expectations."""
    r = opt("--help")
    assert r.returncode == 0, r.stderr
    help_text = " ".join(r.stdout.split())
    assert "expected-error@+N" in help_text
    assert "Prints the content of a triggered verifier exception" not in help_text


def test_unknown_pass_suggests(valid: Path) -> None:
    r = opt(str(valid), "-p", "canonicalise")
    assert_clean_failure(r, "error: unknown pass 'canonicalise' (did you mean 'canonicalize'")


def test_unknown_pass_option(valid: Path) -> None:
    r = opt(str(valid), "-p", "test-fail-pass{mdoe=1}")
    assert_clean_failure(
        r, "unknown option 'mdoe' for pass 'test-fail-pass' (did you mean 'mode'?)"
    )


def test_bad_option_value(valid: Path) -> None:
    r = opt(str(valid), "-p", "test-fail-pass{mode=3}")
    assert_clean_failure(r, "invalid options for pass 'test-fail-pass'")


def test_bad_pipeline_syntax(valid: Path) -> None:
    assert_clean_failure(opt(str(valid), "-p", "cse{"), "invalid pass pipeline 'cse{'")


def test_unknown_flag(valid: Path) -> None:
    assert_clean_failure(opt(str(valid), "--no-such-flag"), "unrecognized arguments")


def test_missing_input_file(tmp_path: Path) -> None:
    r = opt(str(tmp_path / "nope.mlir"))
    assert_clean_failure(r, "could not open input file")
    assert "No such file or directory" in r.stderr


def test_malformed_mlir_has_line_col_and_caret(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(VALID.replace("%a, %b : i32", "%a, %b : i64"))
    r = opt(str(path))
    assert_clean_failure(r, f"{path}:4:19: error:")
    lines = r.stderr.splitlines()
    assert lines[1] == "  %c = arith.addi %a, %b : i64"
    assert lines[2].strip().startswith("^")


def test_verifier_error_names_the_op_line(tmp_path: Path) -> None:
    path = tmp_path / "invalid.mlir"
    path.write_text(VALID.replace("arith.addi %a, %b : i32", '"arith.addi"(%a) : (i32) -> i32'))
    r = opt(str(path))
    assert_clean_failure(r, f"{path}:4:3: error: 'arith.addi' op")


def test_internal_error_is_one_line_with_hint(valid: Path) -> None:
    r = opt(str(valid), "-p", 'test-fail-pass{mode="exception"}')
    assert_clean_failure(r, "internal error in pass 'test-fail-pass': RuntimeError")
    assert "--reproducer" in r.stderr
    r = opt(str(valid), "-p", 'test-fail-pass{mode="exception"}', "--traceback")
    assert r.returncode == 1 and "Traceback" in r.stderr


def test_dumps_and_timing_stay_off_stdout(valid: Path) -> None:
    r = opt(str(valid), "-p", "canonicalize,cse", "--print-ir-after-all", "--timing")
    assert r.returncode == 0, r.stderr
    assert "IR Dump" not in r.stdout and "Execution time report" not in r.stdout
    assert "// -----// IR Dump After Canonicalize (canonicalize) //----- //" in r.stderr
    assert "Execution time report" in r.stderr


def test_verify_diagnostics_missing_expectation_fails(tmp_path: Path) -> None:
    path = tmp_path / "vd.mlir"
    path.write_text("// expected-error@+1 {{never}}\n" + VALID)
    r = opt(str(path), "--verify-diagnostics")
    assert r.returncode == 1
    assert f'{path}:1: error: expected error "never" was not produced' in r.stderr


def test_verify_diagnostics_expected_error_passes(tmp_path: Path) -> None:
    path = tmp_path / "vd.mlir"
    bad = VALID.replace(
        "  %c = arith.addi %a, %b : i32",
        '  // expected-error@+1 {{Expected 2 operands}}\n  %c = "arith.addi"(%a) : (i32) -> i32',
    )
    path.write_text(bad)
    r = opt(str(path), "--verify-diagnostics")
    assert r.returncode == 0, r.stderr


def test_reproducer_roundtrip(tmp_path: Path) -> None:
    src = tmp_path / "in.mlir"
    src.write_text(VALID.replace("arith.addi %a, %b :", "arith.addi %a, %b {test.fail} :"))
    repro = tmp_path / "repro.mlir"
    r = opt(str(src), "-p", "cse,test-fail-pass", "--reproducer", str(repro))
    assert_clean_failure(r, f"ziggurat-opt: reproducer written to {repro}")
    assert f"{src}:4:3: error: 'arith.addi' op test-fail-pass: deliberate failure" in r.stderr
    text = repro.read_text()
    assert "mlir_reproducer" in text and "builtin.module(test-fail-pass)" in text
    replay = opt(str(repro), "--run-reproducer")
    assert_clean_failure(replay, f"{src}:4:3: error: 'arith.addi' op test-fail-pass")
    # the located line names the original file, which the replay does not open
    assert "%c = arith.addi %a, %b {test.fail}" not in replay.stderr


def test_named_pipeline_expands() -> None:
    names = [s.name for s in expand("dce,cleanup")]
    assert names == ["dce", "canonicalize", "cse", "dce"]
    assert len(expand("cpu-default")) > 10
    with pytest.raises(PipelineError):
        expand("a", {"a": "b", "b": "a"})
    with pytest.raises(PipelineError):
        expand("cleanup{x=1}")


def test_extract_reproducer_keeps_line_numbers() -> None:
    text = 'module {}\n{-#\n external_resources: { mlir_reproducer: { pipeline: "builtin.module(cse,dce)" } }\n#-}\n'
    ir, pipeline = extract_reproducer(text)
    assert pipeline == "cse,dce"
    assert ir.count("\n") == text.count("\n") and "#-}" not in ir


def test_expectation_designators() -> None:
    lines = [
        "// expected-error@below {{b}}",
        "op1",
        "op2 // expected-warning {{same}}",
        "// expected-remark@above {{a}}",
        "// expected-note@-2 {{minus}}",
        "// expected-error@unknown {{u}}",
    ]
    got = {(e.severity, e.line) for e in parse_expectations(lines)}
    assert got == {("error", 2), ("warning", 3), ("remark", 3), ("note", 3), ("error", None)}
    exps = parse_expectations(["x // expected-error {{boom}}"])
    assert check_expectations([Diag("error", "big boom", "f", 1, 1)], exps, "f", {}) == []
    exps = parse_expectations(["x // expected-error {{boom}}"])
    errors = check_expectations([Diag("error", "boom", "f", 2, 1)], exps, "f", {})
    assert len(errors) == 2


def _limit_memory() -> None:
    """1 GiB of address space: a driver that reads /dev/zero fails fast instead of eating RAM."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero", "fifo"])
def test_diagnostic_never_reads_files_named_in_locations(tmp_path: Path, target: str) -> None:
    """A `loc("path":N:M)` in the IR must not make the driver open `path` to show a source line:
    that printed /etc/passwd, exhausted memory on /dev/zero and hung on a FIFO."""
    if target == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    path = tmp_path / "loc.mlir"
    path.write_text(
        VALID.replace(
            "arith.addi %a, %b : i32", f'"arith.addi"(%a) : (i32) -> i32 loc("{target}":1:1)'
        )
    )
    r = subprocess.run(
        [sys.executable, "-m", "compiler.cli.opt", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,  # a hang on the FIFO fails here
        preexec_fn=_limit_memory,
    )
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"{target}:1:1: error: 'arith.addi' op Expected 2 operands, but got 1"
    ]


def test_render_shows_only_in_memory_source() -> None:
    diag = Diag("error", "boom", "/etc/passwd", 1, 1)
    assert diag.render({}) == "/etc/passwd:1:1: error: boom"
    assert diag.render({"/etc/passwd": ["in memory"]}) == (
        "/etc/passwd:1:1: error: boom\nin memory\n^"
    )


# -- our own passes and dialect, and locations on stdin --------------------------------------

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
    assert (
        "unknown pass 'convert-graph-to-linalgg' (did you mean 'convert-graph-to-linalg'"
        in r.stderr
    )


def test_opt_malformed_graph_op_on_stdin_has_line_col() -> None:
    r = opt("-p", "convert-graph-to-linalg", stdin=GRAPH_ADD.replace("%x, %y :", "%x :"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert re.match(r"<stdin>:2:\d+: error: ", r.stderr), r.stderr
    assert "%a = graph.add %x :" in r.stderr.splitlines()[1]  # the offending line, then a caret
    assert r.stderr.splitlines()[2].strip().startswith("^")
