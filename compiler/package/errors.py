"""PackageError: a package that cannot be written or loaded, with the file and the reason."""

from __future__ import annotations

import os

from compiler.errors import ZigguratError


class PackageError(ZigguratError):
    """A package refused or unwritable. The message is `<file>: <problem>` on one line (the CLI
    prints it after `ziggurat: error:`); `path` and `problem` are kept for callers."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
