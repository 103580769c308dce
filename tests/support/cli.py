"""How tests start the `ziggurat` command line as a user would: a separate process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def ziggurat_cmd() -> list[str]:
    """The installed console script next to this interpreter, else the module it runs."""
    script = Path(sys.executable).parent / "ziggurat"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "compiler.cli"]


def run_ziggurat(*args: str | Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """`ziggurat ARGS...` from the repository root, its output captured as text."""
    from tests.support import REPO_ROOT

    return subprocess.run(
        [*ziggurat_cmd(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=timeout,
    )
