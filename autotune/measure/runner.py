"""The CPU runner: a child process loads object files, calls `kernel` once (checked), times it.

The child is a plain interpreter holding one end of a socket pair; it loads code through
compiler/backends/llvm_cpu/jit.py, the same JIT the model API uses, and imports no xDSL. It is
reused across candidates and restarted after a crash, a timeout or a rejected output (a stray
write may have corrupted it). Each workload's inputs are made once per process
(`random_inputs`) and copied for every run, so every candidate sees the same data.

Paired timing: given a baseline (the task's default schedule, `RunInputs.baseline`), the batch's
correct candidates and the baseline are timed again after their checked runs, in rotation (one
call series each per round), and those are the costs. A shared host's speed changes: this project's 2-vCPU VM loses its second
vCPU for bursts of tens of milliseconds, during which a two-thread default schedule runs up to
6x slower while a candidate that barely uses the second thread does not
(tests/bench/bench_thread_noise.py). Rotation spreads each one's samples over the whole batch,
so each minimum is likely to come from an undisturbed moment, and a candidate's cost over its
baseline's stays comparable with records measured minutes apart.
"""

from __future__ import annotations

import atexit
import functools
import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from autotune.measure.child import ChildRunner, die_with_parent, questions
from autotune.measure.interfaces import (
    RunInputs,
    RunResult,
    RunSettings,
    random_inputs,
)
from compiler.backends.llvm_cpu import jit
from compiler.runtime import aligned_copy, time_calls

MIN_REPEAT_S = 0.002  # each timed repeat runs the kernel `number` times, at least this long
KERNEL = "kernel"  # the function an object file exports (see builder.py)

# ----------------------------------------------------------------------------- the child


def _runner_entry(fd: int) -> None:
    die_with_parent()
    _runner_main(Connection(fd))


class _Loaded:
    """A loaded object file's kernel, called on its own copies of the inputs."""

    def __init__(self, obj: bytes, init: list[np.ndarray], threads: int) -> None:
        signature = {KERNEL: (("ptr",) * len(init), None)}
        self.program = jit.load(objects=[obj], signatures=signature, threads=threads)
        self.args = [aligned_copy(a) for a in init]
        cfn = self.program.c_function(KERNEL)
        self.call = functools.partial(cfn, *(a.ctypes.data for a in self.args))

    def close(self) -> None:
        self.program.close()


def _number(first_s: float, number: int) -> int:
    """Calls per timed repeat: `number`, or (0) enough for MIN_REPEAT_S."""
    return number if number > 0 else max(1, int(MIN_REPEAT_S / max(first_s, 1e-9)))


def _run(
    init: list[np.ndarray], obj: bytes, repeat: int, number: int, budget_s: float, threads: int
) -> tuple[list[float], list[np.ndarray]]:
    """Load `obj`, call its kernel once on copies of `init` (the checked call, and the warm-up),
    then time it: (seconds per call of each repeat, the arguments after the first call)."""
    kernel = _Loaded(obj, init, threads)
    try:
        (first,) = time_calls(kernel.call, 1, 1)
        outputs = [a.copy() for a in kernel.args]
        calls = _number(first, number)
        # a slow kernel gets fewer repeats rather than a timeout (the budget is half the limit)
        repeat = max(1, min(repeat, int(budget_s / max(first * calls, 1e-9))))
        return time_calls(kernel.call, repeat, calls), outputs
    finally:
        kernel.close()


def _rotate(
    init: list[np.ndarray],
    objs: list[bytes],
    baseline: bytes,
    repeat: int,
    number: int,
    budget_s: float,
    threads: int,
) -> tuple[list[list[float]], list[float]]:
    """Time the baseline and every object in turns, `repeat` rounds (fewer if they would take
    more than `budget_s`): (each object's seconds per call, one per round; the baseline's)."""
    loaded: list[_Loaded] = []
    try:
        for obj in [baseline, *objs]:
            loaded.append(_Loaded(obj, init, threads))
        firsts = [time_calls(k.call, 1, 1)[0] for k in loaded]  # warm-up
        calls = [_number(f, number) for f in firsts]
        per_round = sum(f * n for f, n in zip(firsts, calls, strict=True))
        rounds = max(1, min(repeat, int(budget_s / max(per_round, 1e-9))))
        costs: list[list[float]] = [[] for _ in loaded]
        for _ in range(rounds):
            for k, n, out in zip(loaded, calls, costs, strict=True):
                out += time_calls(k.call, 1, n)
        return costs[1:], costs[0]
    finally:
        for k in loaded:
            k.close()


def _runner_main(conn: Connection) -> None:
    """The runner process: answer each ("run", ...) with ("ok", costs, outputs, run_s) and each
    ("rotate", ...) with ("ok", costs of each object, baseline costs), or ("error", message),
    until ("exit",) or the parent goes away."""
    jit.target_machine()  # LLVM's native target initialized before the first run
    inputs: dict[str, list[np.ndarray]] = {}
    conn.send(("ready",))
    for msg in questions(conn):
        kind, key, signature, *rest = msg
        t_start = time.perf_counter()
        if key not in inputs:
            inputs[key] = random_inputs(signature)
        try:
            if kind == "rotate":
                reply: tuple[Any, ...] = _rotate(inputs[key], *rest)
            else:
                costs, outputs = _run(inputs[key], *rest)
                reply = (costs, outputs, time.perf_counter() - t_start)
        except Exception as e:  # a broken object file, not a crash
            conn.send(("error", f"{type(e).__name__}: {e}"))
            continue
        conn.send(("ok", *reply))


# ----------------------------------------------------------------------------- the parent


class LocalRunner(ChildRunner):
    """A persistent runner process on this machine; `run` restarts it after a crash, a timeout
    or an output its check rejects. Object code that calls the thread-pool runtime runs its
    parallel loops on `settings.threads` threads. With a baseline, the builds that ran correctly
    are then timed again in rotation with it (`_pair`), and those timings are their costs."""

    def __init__(self) -> None:
        super().__init__(
            "import sys; from autotune.measure.runner import _runner_entry; "
            "_runner_entry(int(sys.argv[1]))"
        )

    def _pair(
        self, inputs: RunInputs, correct: list[tuple[bytes, RunResult]], settings: RunSettings
    ) -> None:
        """Replace the costs of the correct runs with timings taken in turns with each other and
        the baseline: a burst of stolen cycles (tens of ms on this project's VM) then slows one
        round of every one of them, not all of one candidate's repeats, and each has the same
        baseline timings. If the rotation fails (a crash, a timeout), the costs stay those of
        each build's own run, unpaired."""
        objs = [artifact for artifact, _ in correct]
        question = (
            "rotate",
            inputs.key,
            inputs.signature,
            objs,
            inputs.baseline,
            settings.repeat,
            settings.number,
            settings.timeout_s / 2 * len(objs),
            settings.threads,
        )
        kind, msg = self.child.ask(question, settings.timeout_s * len(objs))
        if kind != "reply" or msg[0] != "ok":
            return
        for (_, result), costs in zip(correct, msg[1], strict=True):
            result.costs, result.baseline_costs = costs, list(msg[2])

    def _run_one(self, inputs: RunInputs, obj: bytes, settings: RunSettings) -> tuple[str, Any]:
        timeout_s = settings.timeout_s
        question = (
            "run",
            inputs.key,
            inputs.signature,
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
