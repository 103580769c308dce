"""The CPU runner: a child process loads object files, calls `kernel` once (checked), times it.

The child is a plain interpreter holding one end of a socket pair; it loads code through
compiler/backends/llvm_cpu/jit.py, the same JIT the model API uses, and imports no xDSL. It is
reused across candidates and restarted after a crash, a timeout or a rejected output (a stray
write may have corrupted it). Each workload's inputs are made once per process
(`random_inputs`) and copied for every run, so every candidate sees the same data.
"""

from __future__ import annotations

import atexit
import functools
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from autotune.measure.child import ChildProcess, die_with_parent
from autotune.measure.interfaces import (
    BuildResult,
    Check,
    RunInputs,
    RunResult,
    RunSettings,
    Signature,
    random_inputs,
    run_each,
)
from compiler.backends.llvm_cpu import jit
from compiler.runtime import aligned_copy, time_calls

MIN_REPEAT_S = 0.002  # each timed repeat runs the kernel `number` times, at least this long
KERNEL = "kernel"  # the function an object file exports (see builder.py)

# ----------------------------------------------------------------------------- the child


def _runner_entry(fd: int) -> None:
    die_with_parent()
    _runner_main(Connection(fd))


def _run(
    init: list[np.ndarray], obj: bytes, repeat: int, number: int, budget_s: float, threads: int
) -> tuple[list[float], list[np.ndarray]]:
    """Load `obj`, call its kernel once on copies of `init` (the checked call, and the warm-up),
    then time it: (seconds per call of each repeat, the arguments after the first call)."""
    signature = {KERNEL: (("ptr",) * len(init), None)}
    program = jit.load(objects=[obj], signatures=signature, threads=threads)
    try:
        cfn = program.c_function(KERNEL)
        args = [aligned_copy(a) for a in init]
        call = functools.partial(cfn, *(a.ctypes.data for a in args))
        (first,) = time_calls(call, 1, 1)
        outputs = [a.copy() for a in args]
        if number <= 0:  # auto: at least MIN_REPEAT_S per repeat
            number = max(1, int(MIN_REPEAT_S / max(first, 1e-9)))
        # a slow kernel gets fewer repeats rather than a timeout (the budget is half the limit)
        repeat = max(1, min(repeat, int(budget_s / max(first * number, 1e-9))))
        return time_calls(call, repeat, number), outputs
    finally:
        program.close()


def _runner_main(conn: Connection) -> None:
    """The runner process: answer each ("run", ...) with ("ok", costs, outputs, run_s) or
    ("error", message) until ("exit",) or the parent goes away."""
    jit.target_machine()  # LLVM's native target initialized before the first run
    inputs: dict[str, list[np.ndarray]] = {}
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "exit":
            return
        _, key, signature, obj, repeat, number, budget_s, threads = msg
        t_start = time.perf_counter()
        if key not in inputs:
            inputs[key] = random_inputs(signature)
        try:
            costs, outputs = _run(inputs[key], obj, repeat, number, budget_s, threads)
        except Exception as e:  # a broken object file, not a crash
            conn.send(("error", f"{type(e).__name__}: {e}"))
            continue
        conn.send(("ok", costs, outputs, time.perf_counter() - t_start))


# ----------------------------------------------------------------------------- the parent


class LocalRunner:
    """A persistent runner process on this machine; `run` restarts it after a crash, a timeout
    or an output its check rejects."""

    def __init__(self) -> None:
        self.child = ChildProcess(
            "import sys; from autotune.measure.runner import _runner_entry; "
            "_runner_entry(int(sys.argv[1]))"
        )

    @property
    def pid(self) -> int | None:
        return self.child.pid

    def stop(self) -> None:
        self.child.stop()

    def run(
        self,
        inputs: RunInputs,
        builds: Sequence[BuildResult],
        settings: RunSettings,
        check: Check | None = None,
    ) -> list[RunResult]:
        """See interfaces.Runner. Object code that calls the thread-pool runtime runs its parallel
        loops on `settings.threads` threads."""

        def run_one(obj: bytes) -> tuple[str, Any]:
            return self._run_one(inputs.key, inputs.signature, obj, settings)

        return run_each("LocalRunner", builds, run_one, check, self.stop)

    def _run_one(
        self, key: str, signature: Signature, obj: bytes, settings: RunSettings
    ) -> tuple[str, Any]:
        """("ok", (costs, outputs, run_s)) | ("runtime_error" | "timeout", message)."""
        timeout_s = settings.timeout_s
        question = (
            "run",
            key,
            signature,
            obj,
            settings.repeat,
            settings.number,
            timeout_s / 2,
            settings.threads,
        )
        kind, msg = self.child.ask(question, timeout_s)
        if kind != "reply":
            return kind, msg
        if msg[0] == "error":  # a broken object file: the child is fine
            return "runtime_error", msg[1]
        return "ok", (msg[1], msg[2], msg[3])


_RUNNER: LocalRunner | None = None


def default_runner() -> LocalRunner:
    """This process's runner (started at its first run, stopped at exit)."""
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = LocalRunner()
        atexit.register(_RUNNER.stop)
    return _RUNNER
