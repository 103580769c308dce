"""How tests start the `ziggurat` command line as a user would: a separate process."""

from __future__ import annotations

import sys
from pathlib import Path


def ziggurat_cmd() -> list[str]:
    """The installed console script next to this interpreter, else the module it runs."""
    script = Path(sys.executable).parent / "ziggurat"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "compiler.cli"]
