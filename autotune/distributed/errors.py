"""What measuring on a dask cluster raises (DaskSetupError for a user's setup, RemoteTaskError for
a task that failed on its worker), the import of dask.distributed that says what to install, and
`_clean`, which makes worker-written text safe to put in a message. Apart because every other
part of the package raises these or cleans worker text."""

from __future__ import annotations

from typing import Any

from compiler.errors import ZigguratError

INSTALL_HINT = "pip install 'ziggurat[tune]'"
_MAX_TEXT = 2000  # characters of worker-written text kept (errors, names)


class DaskSetupError(ZigguratError, RuntimeError):
    """No usable cluster: dask missing, the scheduler unreachable or insecure, bad TLS files, no
    workers, mixed targets (a user error: the CLI prints it as one `ziggurat: error:` line)."""


class RemoteTaskError(Exception):
    """A dask task failed on its worker; the text is read from the pickled exception without
    unpickling it (a worker's pickle would run the worker's code here)."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise DaskSetupError(
            f"measuring on a dask cluster needs dask.distributed: {INSTALL_HINT}"
        ) from e
    return distributed


def _clean(text: object, limit: int = _MAX_TEXT) -> str:
    """Worker-written text as one printable string (no terminal escapes), at most `limit` chars."""
    s = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in str(text)[: limit + 1])
    return s if len(s) <= limit else s[: limit - 3] + "..."
