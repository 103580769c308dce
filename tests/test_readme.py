"""README.md still says what the code does.

- Every ```python block preceded by a `<!-- test -->` line runs (in a fresh process, in a temporary
  folder, with a compile cache of its own).
- Every code block preceded by `<!-- file: PATH -->` is that file, verbatim (the "Your own
  passes" example is taken from tests/examples/relu_fold/, which tests/examples tests).
- The first two commands, which .ci/run extracts (`sed -n '/^# 1\\./{n;p;q}'`), are unchanged.
- Every `ziggurat <command>` and `ziggurat-opt` line of a ```sh block, and every inline
  `` `ziggurat ...` `` span, names a command and flags that `--help` lists, with values among the
  flag's choices; every pass a `ziggurat-opt -p` pipeline names is registered.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
TIMEOUT = 600  # a hang guard: a busy CI host compiles slowly
EXAMPLE_PASSES = {"relu-fold"}
"""Passes of tests/examples/relu_fold/, which only its own venv registers."""

FIRST_COMMANDS = [
    "# 1. Install and run the main job: a built-in CNN compiled to machine code, tuned briefly, "
    "run, checked against onnxruntime",
    "python3 -m pip install -e . && ziggurat demo",
    "",
    "# 2. Install everything the tests need (incl. Debian's mlir-opt-22) and run every test: "
    "pytest + lit",
    "bash .ci/run",
]


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based
    marker: str  # the `<!-- ... -->` line just before the fence, or ""

    def __str__(self) -> str:
        return f"README.md:{self.line}"


def _blocks() -> list[Block]:
    lines = README.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        prev = lines[i - 1].strip() if i else ""
        marker = prev if prev.startswith("<!--") else ""
        blocks.append(Block(m.group(1), "\n".join(lines[i + 1 : end]) + "\n", i + 1, marker))
        i = end + 1
    return blocks


BLOCKS = _blocks()
RUNNABLE = [b for b in BLOCKS if b.marker == "<!-- test -->"]
FROM_FILES = [b for b in BLOCKS if b.marker.startswith("<!-- file:")]


def test_first_commands_unchanged() -> None:
    lines = README.read_text().splitlines()
    start = lines.index("```sh")
    assert lines[start + 1 : start + 1 + len(FIRST_COMMANDS)] == FIRST_COMMANDS
    # what .ci/run's sed takes: the line after the first one starting with "# 1."
    first = next(i for i, ln in enumerate(lines) if ln.startswith("# 1."))
    assert lines[first + 1] == "python3 -m pip install -e . && ziggurat demo"


def test_markers_are_used() -> None:
    assert RUNNABLE, "no <!-- test --> python block in README.md"
    assert all(b.lang == "python" for b in RUNNABLE), [str(b) for b in RUNNABLE]
    assert FROM_FILES, "no <!-- file: PATH --> block in README.md"


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    env = {**os.environ, "ZIGGURAT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ZIGGURAT_NO_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    script = tmp_path / "block.py"
    script.write_text(block.text)
    r = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert r.returncode == 0, f"{block} failed:\n{r.stdout}\n{r.stderr}"


@pytest.mark.parametrize("block", FROM_FILES, ids=str)
def test_block_is_the_file(block: Block) -> None:
    m = re.fullmatch(r"<!-- file: (\S+) -->", block.marker)
    assert m, f"{block}: malformed marker {block.marker!r}"
    assert block.text == (REPO / m.group(1)).read_text(), f"{block} differs from {m.group(1)}"


# -- commands ------------------------------------------------------------------------------


def _tool(name: str, module: str) -> list[str]:
    """The console script beside this Python, else `python -m module`."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return [str(local)]
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", module]


def _output(cmd: list[str]) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert r.returncode == 0, f"{' '.join(cmd)}: {r.stderr}"
    return r.stdout


@dataclass(frozen=True)
class Usage:
    flags: frozenset[str]
    choices: dict[str, frozenset[str]]


@functools.cache
def _usage(prog: str, sub: str = "") -> Usage:
    if prog == "ziggurat":
        cmd = [*_tool("ziggurat", "compiler.cli"), *([sub] if sub else []), "--help"]
    else:
        cmd = [*_tool("ziggurat-opt", "compiler.cli.opt"), "--help"]
    text = _output(cmd)
    flags = frozenset(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))
    choices = {
        flag: frozenset(values.split(","))
        for flag, values in re.findall(r"(--?[\w-]+) \{([^}]*)\}", text)
    }
    return Usage(flags, choices)


@functools.cache
def _subcommands() -> frozenset[str]:
    m = re.search(r"\{([\w,-]+)\}", _output([*_tool("ziggurat", "compiler.cli"), "--help"]))
    assert m, "ziggurat --help names no commands"
    return frozenset(m.group(1).split(","))


@functools.cache
def _registered_passes() -> frozenset[str]:
    text = _output([*_tool("ziggurat-opt", "compiler.cli.opt"), "--list-passes"])
    names = re.findall(r"^  ([\w-]+)(?: =|$)", text, re.MULTILINE)
    return frozenset(names)


def _split(where: str, line: str) -> list[tuple[str, list[str]]]:
    """The ziggurat / ziggurat-opt commands of one shell line, each up to `&&`, `|` or `;`."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError as e:
        raise AssertionError(f"{where}: {e}: {line}") from None
    found = []
    for i, tok in enumerate(tokens):
        if tok in ("ziggurat", "ziggurat-opt"):
            rest = []
            for t in tokens[i + 1 :]:
                if t in ("&&", "||", ";", "|") or t.endswith(";"):
                    break
                rest.append(t)
            found.append((f"{where}: {line.strip()}", [tok, *rest]))
    return found


def _commands() -> list[tuple[str, list[str]]]:
    """(where, tokens) of every ziggurat / ziggurat-opt command the README shows."""
    found: list[tuple[str, list[str]]] = []
    for block in BLOCKS:
        if block.lang == "sh":
            text = block.text.replace("\\\n", " ")
            for n, line in enumerate(text.splitlines()):
                found += _split(f"{block} (+{n + 1})", line)
    prose = re.sub(r"```.*?```", "", README.read_text(), flags=re.DOTALL)
    for span in re.findall(r"`(ziggurat(?:-opt)? [^`]+)`", prose):
        if re.search(r"<|\.\.\.", span):
            continue  # a placeholder, not a command
        found += _split("README.md inline", " ".join(span.split()))
    return found


COMMANDS = _commands()


def test_commands_found() -> None:
    progs = {tokens[0] for _, tokens in COMMANDS}
    assert progs == {"ziggurat", "ziggurat-opt"}, progs


def _passes(pipeline: str) -> list[str]:
    """Pass names of a `-p` pipeline: commas outside braces separate passes."""
    names, depth, current = [], 0, ""
    for ch in pipeline + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(current.split("{", 1)[0].strip())
            current = ""
            continue
        current += ch
    return [n for n in names if n]


@pytest.mark.parametrize("where, tokens", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_command_parses(where: str, tokens: list[str]) -> None:
    prog, args = tokens[0], [t.strip("[]") for t in tokens[1:]]
    if prog == "ziggurat":
        assert args and args[0] in _subcommands(), f"{where}: no such command"
        usage, args = _usage(prog, args[0]), args[1:]
    else:
        usage = _usage(prog)
    for i, arg in enumerate(args):
        if not arg.startswith("-") or re.fullmatch(r"-\d.*", arg):
            continue
        flag, _, value = arg.partition("=")
        assert flag in usage.flags, f"{where}: {prog} has no flag {flag}"
        if not value and i + 1 < len(args) and not args[i + 1].startswith("-"):
            value = args[i + 1]
        if flag in usage.choices and value:
            for v in value.split("|"):
                assert v in usage.choices[flag], f"{where}: {flag} {v} is not a choice"
        if prog == "ziggurat-opt" and flag in ("-p", "--passes"):
            named = {n for n in _passes(value) if not n.isupper()}  # PASS: a placeholder
            unknown = named - _registered_passes() - EXAMPLE_PASSES
            assert not unknown, f"{where}: unknown passes {sorted(unknown)}"
