"""`ziggurat compile --timing` (compiler/compile_timing.py): the report's structure on stderr.

The report names every level and the passes inside it, the machine-code steps (@main's lowering,
translation, parsing and optimization, the wait for the kernel workers, the link) and the kernel
workers' CPU seconds per step; every figure parses as a number and every percentage too. It is
printed to stderr, so stdout still carries only the output. The values are never checked: they
are times.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.cli.main import main
from compiler.levels import LEVELS

ROW = re.compile(r"^  +(\d+\.\d{4}) \( *(\d+\.\d)%\)  ( *)(\S.*)$")
"""One report row: seconds, percent of the total, indentation (depth), name."""


def _compile(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(["compile", "zoo:small-cnn", *argv, "--timing"]) == 0
    out, err = capsys.readouterr()
    return out, err


def _sections(err: str) -> list[list[tuple[float, int, str]]]:
    """Each report's rows as (seconds, depth, name); every row line must parse."""
    reports: list[list[tuple[float, int, str]]] = []
    for line in err.splitlines():
        if "Total Execution Time:" in line:
            float(line.split(":")[1].split()[0])
            reports.append([])
            continue
        m = ROW.match(line)
        if m and reports:
            seconds, pct, indent, name = m.groups()
            assert 0.0 <= float(pct) <= 100.0 + 1e-6 or name == "Total"
            reports[-1].append((float(seconds), len(indent) // 2, name))
    return reports


def _names(rows: list[tuple[float, int, str]], depth: int | None = None) -> list[str]:
    return [n for _, d, n in rows if depth is None or d == depth]


def test_package_compile_reports_levels_passes_and_machine_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZIGGURAT_NO_CACHE", "1")
    monkeypatch.setenv("ZIGGURAT_COMPILE_JOBS", "2")
    out, err = _compile(capsys, "-o", str(tmp_path / "m.zpkg"))
    assert out == ""
    levels, workers = _sections(err)
    top = _names(levels, 0)
    assert top[0] == "import"
    for level in ("graph", "tensor", "buffers", "loops", "machine-code", "write package"):
        assert level in top
    assert top[-1] == "Total"
    assert top.index("graph") < top.index("loops") < top.index("machine-code")
    names = _names(levels)
    for level in ("graph", "tensor", "buffers", "loops"):
        for p in LEVELS[level]:
            if p != "blocked-layout":  # the layout pass is chosen per model (`--layout`)
                assert p in names, p
    for step in (
        "split kernels",
        "@main (while the workers compile the kernels)",
        "translate to LLVM IR (llvmlite)",
        "print + parse LLVM IR",
        "LLVM optimize (O3)",
        "wait for the kernel workers",
        "link",
    ):
        assert step in names, step
    for p in LEVELS["llvm-dialect"]:
        assert p in names, p
    # the kernel workers' CPU seconds, per step
    assert "CPU Time" in err
    wnames = _names(workers)
    for step in (
        "llvm-dialect",
        "translate to LLVM IR (llvmlite)",
        "print + parse LLVM IR",
        "LLVM optimize (O3)",
        "LLVM codegen (object file)",
    ):
        assert step in wnames, step
    assert re.search(r"^  kernels: \d+$", err, re.M)
    assert re.search(r"^  CPU seconds \(this process and its workers\): \d+\.\d+$", err, re.M)
    # a section's time is at least that of its steps
    total = dict((n, s) for s, d, n in levels if d == 0)
    assert total["Total"] >= total["machine-code"] >= 0.0


def test_ir_output_keeps_stdout_for_the_ir(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _compile(capsys, "--emit", "llvm-ir")
    assert "define" in out and "Execution Time" not in out
    (levels,) = _sections(err)
    top = _names(levels, 0)
    assert top[:2] == ["import", "graph"] and "llvm-dialect" in top and "llvm-ir" in top
    assert "LLVM optimize (O3)" in _names(levels, 1)


def test_no_report_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "zoo:small-cnn", "--emit", "loops"]) == 0
    _, err = capsys.readouterr()
    assert "Execution Time" not in err


def _stderr_on_a_terminal(*argv: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal (stdout a pipe); what it wrote there."""
    import os
    import pty
    import subprocess

    from tests.support.cli import ziggurat_cmd

    leader, follower = pty.openpty()
    env = {**os.environ, "ZIGGURAT_NO_CACHE": "1"}
    try:
        proc = subprocess.run(
            [*ziggurat_cmd(), *argv], stderr=follower, stdout=subprocess.PIPE, env=env, timeout=600
        )
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end is closed, all is read
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode()


def test_a_compile_shows_its_steps_on_a_terminal(tmp_path: Path) -> None:
    """A long compile is not silent on a terminal: a line per level and one for the machine
    code as each ends (logs and pipes get none: the other tests see an empty stderr)."""
    rc, err = _stderr_on_a_terminal("compile", "zoo:mlp", "-o", str(tmp_path / "m.zpkg"))
    assert rc == 0, err
    steps = re.findall(r"^compile: (\S+) (\d+\.\d) s\r?$", err, re.M)
    names = [name for name, _ in steps]
    for level in ("graph", "tensor", "buffers", "loops", "machine-code"):
        assert level in names, err
    assert names.index("graph") < names.index("loops") < names.index("machine-code"), err
