"""The transport: a dask `Client` that unpickles nothing a worker can write (msgpack and error
deserializers only, no events, a failed task's exception read from its pickle's opcodes), and the
garbage-collection guard its start needs. Apart so that what is trusted is in one place."""

from __future__ import annotations

import contextlib
import functools
import gc
import pickletools
from typing import Any

from autotune.distributed.errors import RemoteTaskError, _clean, _import_distributed
from compiler.pass_runner import gc_paused

SAFE_DESERIALIZERS = ["msgpack", "error"]  # plain data, or dask's "could not serialize" message


@contextlib.contextmanager
def _no_collection() -> Any:
    """Collect garbage now, then none while a Client starts: an earlier Client that failed to
    connect is freed by the collector, and its __del__ closes dask's shared event-loop runner,
    which deadlocks if it runs inside another Client's start (distributed holds the runner's
    lock there). Seen as a hang after a refused connection, e.g. a rejected certificate."""
    gc.collect()
    with gc_paused():
        yield


def describe_pickled_exception(exception: Any) -> str:
    """'Class: message' of a failed task's exception (pickled bytes, or dask's Serialized wrapper
    of them), read from the pickle's opcodes (`pickletools.genops` executes nothing)."""
    data = None
    if isinstance(exception, (bytes, bytearray, memoryview)):
        data = bytes(exception)
    else:
        header = getattr(exception, "header", None)
        frames = getattr(exception, "frames", None)
        if (
            isinstance(header, dict)
            and header.get("serializer") == "dask"
            and header.get("type") == "bytes"
            and not any(header.get("compression") or ())
            and isinstance(frames, (list, tuple))
        ):
            data = b"".join(bytes(f) for f in frames)
    unknown = "the task failed on its worker (its exception is not unpickled here)"
    if data is None or len(data) > 1 << 20:
        return unknown
    memo: dict[int, Any] = {}
    strings: list[str] = []  # strings pushed, the module/name pairs of globals taken out
    found: list[tuple[str, str, int]] = []  # (module, name, strings seen before it)
    pushed: Any = None
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            if name == "MEMOIZE":
                memo[len(memo)] = pushed
                continue
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                if isinstance(arg, int):
                    memo[arg] = pushed
                continue
            pushed = None
            if "UNICODE" in name and isinstance(arg, str):
                strings.append(arg)
                pushed = arg
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                pushed = memo.get(arg) if isinstance(arg, int) else None
                if isinstance(pushed, str):
                    strings.append(pushed)
            elif name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append((strings[-2], strings[-1], len(strings) - 2))
                del strings[-2:]
            elif name == "GLOBAL" and isinstance(arg, str):
                module, _, qualname = arg.partition(" ")
                found.append((module, qualname, len(strings)))
    except Exception:  # truncated or not a pickle: what was read so far still counts
        pass
    for module, qualname, seen in found:
        if module.split(".")[0] in ("tblib", "copyreg", "copy_reg", "_codecs", "functools"):
            continue
        if module == "builtins" and not qualname[:1].isupper():
            continue  # getattr and friends
        message = strings[seen] if seen < len(strings) else ""
        return _clean(f"{qualname}: {message}" if message else qualname, 500)
    return unknown


@functools.cache
def _safe_client_class() -> type:
    """distributed.Client, minus everything that unpickles what a worker can write."""
    distributed = _import_distributed()

    client_class: Any = distributed.Client

    class SafeClient(client_class):
        """A client whose report stream leaves dask's Serialized payloads serialized, that drops
        the pickled result type, names a failed task's exception without unpickling it, and
        handles no events (distributed's "warn" handler unpickles what a worker logs). One that
        fails to start is closed at once (see _abandon)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            try:
                super().__init__(*args, **kwargs)
            except BaseException:
                self._abandon()
                raise

        def _abandon(self) -> None:
            """Close a client whose start failed while its event loop still runs: left to its
            __del__ at exit, distributed waits 2 x the timeout for a loop already stopped, then
            prints a traceback."""
            client: Any = self
            try:
                if getattr(client, "status", "closed") not in ("closed", "newly-created"):
                    client.close(timeout=10)
            except Exception:
                pass
            finally:
                client.status = "closed"  # __del__ closes nothing more
                with contextlib.suppress(Exception):
                    client._loop_runner.stop()

        async def _ensure_connected(self, timeout: float | None = None) -> None:
            await super()._ensure_connected(timeout=timeout)
            comm = getattr(self.scheduler_comm, "comm", None)
            if comm is not None:  # every message on it after the handshake (reconnects too)
                comm.deserialize = False

        def _handle_key_in_memory(self, key: Any = None, type: Any = None, workers: Any = None):
            return super()._handle_key_in_memory(key=key, type=None, workers=workers)

        def _handle_task_erred(self, key: Any = None, exception: Any = None, traceback: Any = None):
            error = RemoteTaskError(describe_pickled_exception(exception))
            return super()._handle_task_erred(key=key, exception=error, traceback=None)

        async def _handle_event(self, topic: str, event: Any) -> None:
            return None

    return SafeClient
