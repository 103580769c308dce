"""CUDA C checked by nvcc without a GPU: compiling to PTX (`nvcc -ptx -arch=sm_90`) catches
what a machine with a GPU would refuse, on machines that only have the toolkit. The PTX itself
(`cuda_to_ptx`) is what a CUDA package carries, checked by ptxas (`check_ptx`) where it exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from compiler.errors import CompileError

_TOOLKIT_BIN = "/usr/local/cuda/bin"
DEFAULT_ARCH = "sm_90"
"""The SM architecture CUDA C is compiled for when no device says otherwise (CUDA 13 takes
sm_75 and newer)."""


def _tool(name: str) -> str | None:
    """`name` on PATH, else in the toolkit's default install, else None."""
    found = shutil.which(name)
    if found:
        return found
    fallback = os.path.join(_TOOLKIT_BIN, name)
    return fallback if os.access(fallback, os.X_OK) else None


def nvcc_path() -> str | None:
    """nvcc on PATH, else the toolkit's default install, else None."""
    return _tool("nvcc")


def ptxas_path() -> str | None:
    """ptxas on PATH, else the toolkit's default install, else None."""
    return _tool("ptxas")


def cuda_to_ptx(source: str, arch: str = DEFAULT_ARCH, timeout_s: float = 300) -> str:
    """`source` (CUDA C) compiled to PTX for `arch` by nvcc; CompileError with nvcc's
    diagnostics if it does not compile (or if there is no nvcc)."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError(f"nvcc not found (on PATH or at {_TOOLKIT_BIN}/nvcc)")
    with tempfile.TemporaryDirectory(prefix="ziggurat-nvcc-") as tmp:
        cu, ptx = Path(tmp) / "kernels.cu", Path(tmp) / "kernels.ptx"
        cu.write_text(source)
        cmd = [nvcc, "-ptx", f"-arch={arch}", "-o", str(ptx), str(cu)]
        _run_tool(cmd, "nvcc", f"nvcc -ptx -arch={arch}", "the CUDA source", timeout_s)
        return ptx.read_text()


def check_cuda_source(source: str, arch: str = DEFAULT_ARCH, timeout_s: float = 300) -> None:
    """Compile `source` (CUDA C) to PTX for `arch`; CompileError with nvcc's diagnostics if it
    does not compile (or if there is no nvcc)."""
    cuda_to_ptx(source, arch, timeout_s)


def check_ptx(ptx: str, arch: str = DEFAULT_ARCH, timeout_s: float = 300) -> bool:
    """Assemble `ptx` for `arch` with ptxas (output discarded): True when it did, False when
    there is no ptxas; CompileError with ptxas's diagnostics when it refuses the PTX."""
    ptxas = ptxas_path()
    if ptxas is None:
        return False
    with tempfile.TemporaryDirectory(prefix="ziggurat-ptxas-") as tmp:
        src = Path(tmp) / "kernels.ptx"
        src.write_text(ptx)
        cmd = [ptxas, f"-arch={arch}", "-o", str(Path(tmp) / "kernels.cubin"), str(src)]
        _run_tool(cmd, "ptxas", f"ptxas -arch={arch}", "the PTX", timeout_s)
    return True


def _run_tool(cmd: list[str], tool: str, call: str, subject: str, timeout_s: float) -> None:
    """Run a CUDA toolkit command (`tool`, invoked as `call`, on `subject`); CompileError with
    its diagnostics when it fails, or when it takes more than `timeout_s` seconds."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{tool} took more than {timeout_s} s on {subject}") from None
    if done.returncode != 0:
        log = (done.stderr + done.stdout).strip()
        raise CompileError(f"{call} failed (exit {done.returncode}):\n{log}")
