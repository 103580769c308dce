"""What every benchmark script does first: references at full speed, and the CPU named.

`prepare()` must run before numpy (or onnxruntime) is imported: OpenBLAS reads its environment
once, when it loads. It unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some environments
set for old OpenBLAS builds and which halve numpy's matmul on Zen 5 (a handicapped reference is
not a result), and pins the BLAS/OpenMP thread pools to the thread count being compared.
`cpu_description()` names the machine beside every figure (Zen 4 and Zen 5 differ twofold).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HANDICAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


_prepared: list[int] = []


def prepare(threads: int = 1) -> None:
    """Clear the reference handicaps and pin the reference's threads, in this process only
    (idempotent: benchmark scripts import each other)."""
    if _prepared:
        return
    if "numpy" in sys.modules:
        raise RuntimeError("bench_env.prepare() must run before numpy is imported")
    _prepared.append(threads)
    for var in HANDICAPS:
        os.environ.pop(var, None)
    for var in THREAD_VARS:
        os.environ[var] = str(threads)


def cpu_description() -> str:
    """The CPU, named as every published figure must name it (compiler/host.py)."""
    from compiler.host import cpu_description as describe

    return describe()


def scratch_db(path: str | None) -> tuple[str, tempfile.TemporaryDirectory[str] | None]:
    """The tuning database to use: the user's path, else one in a temporary directory (keep the
    returned TemporaryDirectory alive while the database is in use; it is removed with it)."""
    if path:
        return path, None
    tmp = tempfile.TemporaryDirectory(prefix="ziggurat-bench-")
    return str(Path(tmp.name) / "tune.jsonl"), tmp
