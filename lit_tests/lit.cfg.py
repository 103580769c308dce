"""lit configuration for ziggurat's FileCheck tests (run `lit lit_tests` from the repo root)."""

# ruff: noqa: F821  (`config` and `lit_config` are injected by lit)

import os
import shutil
import sys

import lit.formats

config.name = "ziggurat"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["Output", "lit.cfg.py", "README.md", "inputs", "Inputs"]

# Make the repo importable and keep the caller's PATH (ziggurat-opt, filecheck live there).
_repo = os.path.dirname(config.test_source_root)
config.environment["PATH"] = os.environ.get("PATH", "")
config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in (_repo, os.environ.get("PYTHONPATH", "")) if p
)
for _var in ("HOME", "TMPDIR", "LANG", "LC_ALL"):
    if _var in os.environ:
        config.environment[_var] = os.environ[_var]


def _tool(name: str) -> str | None:
    """Prefer the script next to lit's own Python (pyenv shims are slow), then PATH."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.access(local, os.X_OK) else shutil.which(name)


# Substitutions are regexes: match the tool name only as a whole command word.
_WORD = r"(?<![\w/.-]){}(?![\w.-])"
_opt = _tool("ziggurat-opt")
config.substitutions.append(
    (_WORD.format("ziggurat-opt"), _opt or f"{sys.executable} -m compiler.cli.opt")
)
config.substitutions.append((_WORD.format("filecheck"), _tool("filecheck") or "filecheck"))

_mlir_opt = shutil.which("mlir-opt-22") or (
    "/usr/bin/mlir-opt-22" if os.path.exists("/usr/bin/mlir-opt-22") else None
)
if _mlir_opt:
    config.available_features.add("mlir-opt")
    config.substitutions.append((_WORD.format("mlir-opt"), _mlir_opt))

# ptxas (CUDA toolkit) checks the PTX that mlir-opt-22 makes from our gpu level.
_ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None
)
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append((_WORD.format("ptxas"), _ptxas))
config.substitutions.append((_WORD.format("python"), sys.executable))
