"""The process a runner measures in: started on first use, asked one question at a time over a
socket pair, killed when it does not answer in time, and restarted after it goes away.

Both runners (runner.py on the CPU, gpu_runner.py on a device) keep their code in such a child:
a crashing candidate takes the child down, not the tuner, and a hung one is only stopped by
killing the process that runs it. The child is a plain interpreter (not multiprocessing's spawn,
which re-imports the caller's __main__) that sends ("ready",) once it can take questions.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from autotune.measure.interfaces import (
    BuildResult,
    Check,
    RunInputs,
    RunResult,
    RunSettings,
    run_each,
)

START_TIMEOUT_S = 60.0  # runner start-up (imports)


def die_with_parent() -> None:
    """Have the OS kill this (child) process when its parent exits, even while it is stuck in a
    hung kernel. Called first thing in the child."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def questions(conn: Connection) -> Iterator[Any]:
    """The parent's questions to a child, in order, until ("exit",) or the parent goes away."""
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "exit":
            return
        yield msg


def exit_reason(proc: subprocess.Popen[bytes], after_s: float) -> str:
    """Why a child went away (it is reaped): the signal that killed it, or its exit code."""
    try:
        code = proc.wait(5)
    except subprocess.TimeoutExpired:
        code = None
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed: killed by {name} after {after_s:.3f} s"
    return f"runner exited with code {code}"


def start_child(code: str) -> tuple[subprocess.Popen[bytes], Connection]:
    """A child running `code` with the file descriptor of its end of a socket pair in
    sys.argv[1]; returned once it has sent ("ready",). RuntimeError if it does not (anything
    else it sent, e.g. ("failed", why), is named)."""
    ours, theirs = socket.socketpair()
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
        )
    finally:
        theirs.close()
    conn = Connection(ours.detach())
    why = ""
    try:
        if conn.poll(START_TIMEOUT_S):
            msg = conn.recv()
            if msg == ("ready",):
                return proc, conn
            why = f": {msg[-1]}"
    except (EOFError, OSError):
        why = f": {exit_reason(proc, 0.0)}"
    proc.kill()
    proc.wait()
    conn.close()
    raise RuntimeError(f"the measurement runner did not start{why}")


class ChildProcess:
    """One child running `code` (see start_child), started when first asked."""

    def __init__(self, code: str) -> None:
        self.code = code
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        """Kill the child (a later question starts a fresh one)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None

    def ask(self, msg: tuple[Any, ...], timeout_s: float) -> tuple[str, Any]:
        """("reply", what the child sent) or ("runtime_error" | "timeout", why); after anything
        but a reply the child is gone (stopped and reaped)."""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            try:
                self._proc, self._conn = start_child(self.code)
            except RuntimeError as e:
                return "runtime_error", str(e)
        assert self._proc is not None and self._conn is not None
        t0 = time.perf_counter()
        try:
            self._conn.send(msg)
            if not self._conn.poll(timeout_s):
                self.stop()
                return "timeout", f"no answer within {timeout_s:g} s (killed)"
            return "reply", self._conn.recv()
        except (EOFError, OSError):
            why = exit_reason(self._proc, time.perf_counter() - t0)
            self.stop()
            return "runtime_error", why


class ChildRunner:
    """A Runner (interfaces.Runner) measuring in one persistent ChildProcess running `code`:
    what the CPU's LocalRunner and a device's GpuRunner share. `run` runs each build with
    `_run_one` (run_each: the child restarts after an output its check rejects); when a run has
    a baseline, `_pair` may then re-time the correct runs beside it."""

    def __init__(self, code: str) -> None:
        self.child = ChildProcess(code)

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
        """See interfaces.Runner."""

        def run_one(artifact: bytes) -> tuple[str, Any]:
            return self._run_one(inputs, artifact, settings)

        results = run_each(type(self).__name__, builds, run_one, check, self.stop)
        correct = [
            (b.artifact, r)
            for b, r in zip(builds, results, strict=True)
            if r.ok and b.artifact is not None  # run_each: every build has one
        ]
        if inputs.baseline is not None and correct:
            self._pair(inputs, correct, settings)
        return results

    def _run_one(
        self, inputs: RunInputs, artifact: bytes, settings: RunSettings
    ) -> tuple[str, Any]:
        """("ok", (costs, outputs, run_s)) | ("runtime_error" | "timeout", message)."""
        raise NotImplementedError

    def _pair(
        self, inputs: RunInputs, correct: list[tuple[bytes, RunResult]], settings: RunSettings
    ) -> None:
        """Re-time the correct runs (each with its build's artifact) paired with
        `inputs.baseline` (by default not: their costs stay unpaired)."""
