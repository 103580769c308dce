"""CUDA C checked by nvcc without a GPU: compiling to PTX (`nvcc -ptx -arch=sm_90`) catches
what a machine with a GPU would refuse, on machines that only have the toolkit."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from compiler.errors import CompileError

_FALLBACK = "/usr/local/cuda/bin/nvcc"


def nvcc_path() -> str | None:
    """nvcc on PATH, else the toolkit's default install, else None."""
    found = shutil.which("nvcc")
    if found:
        return found
    return _FALLBACK if os.access(_FALLBACK, os.X_OK) else None


def check_cuda_source(source: str, arch: str = "sm_90", timeout_s: float = 300) -> None:
    """Compile `source` (CUDA C) to PTX for `arch`; CompileError with nvcc's diagnostics if it
    does not compile (or if there is no nvcc)."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError("nvcc not found (on PATH or at /usr/local/cuda/bin/nvcc)")
    with tempfile.TemporaryDirectory(prefix="ziggurat-nvcc-") as tmp:
        cu = Path(tmp) / "kernels.cu"
        cu.write_text(source)
        cmd = [nvcc, "-ptx", f"-arch={arch}", "-o", str(Path(tmp) / "kernels.ptx"), str(cu)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise CompileError(f"nvcc took more than {timeout_s} s on the CUDA source") from None
        if done.returncode != 0:
            log = (done.stderr + done.stdout).strip()
            raise CompileError(f"nvcc -ptx -arch={arch} failed (exit {done.returncode}):\n{log}")
