"""Build and run tuning candidates: object code in worker processes, runs in a child process.

A measurement is a function of (task, candidate passes, target) only: the kernel IR is lowered with
the candidate's schedule passes and compiled to an object file (`build`, in a forked worker pool);
the object is loaded into a runner process (numpy + llvmlite only, no xDSL), called on fixed random
64-byte-aligned inputs, checked against the task's default-schedule reference and timed. The runner
is reused across candidates and restarted after a crash, a timeout or a wrong result (a stray write
may have corrupted it). Failures are results (`error_kind`), never exceptions; when the reference
itself cannot be built or run, no candidate of the task is run or counted as correct.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

REFERENCE_PASSES = ["default-schedule"]
ERROR_KINDS = ("compile_error", "runtime_error", "timeout", "wrong_result", "reference_error")
"""`reference_error`: the task's default-schedule reference could not be built or run, so no
candidate of the task can be checked (none is run, none counts as correct)."""
INPUT_SEED = 0
MIN_REPEAT_S = 0.002  # each timed repeat runs the kernel `number` times, at least this long
_START_TIMEOUT_S = 60.0  # runner start-up (imports) and reference runs


@dataclass
class MeasureResult:
    costs: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    error_kind: str | None = None  # one of ERROR_KINDS, None on success
    error: str = ""
    build_s: float = 0.0
    run_s: float = 0.0  # wall time of the run in the runner (load, check, timing)

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def min_s(self) -> float:
        return min(self.costs) if self.costs else float("inf")

    @property
    def median_s(self) -> float:
        return float(np.median(self.costs)) if self.costs else float("inf")


def host_target() -> dict[str, str]:
    """The record's `target` for this machine: the LLVM CPU name and feature string."""
    import llvmlite.binding as llvm

    return {"cpu": llvm.get_host_cpu_name(), "features": llvm.get_host_cpu_features().flatten()}


# ----------------------------------------------------------------------------- build


def _kernel_ir(task: Any, kernel_ir: str | None) -> str:
    return kernel_ir if kernel_ir is not None else task.kernel_ir


def _parse_kernel(text: str) -> tuple[Any, Any, Any]:
    from xdsl.dialects import func
    from xdsl.parser import Parser

    from compiler.model import make_context

    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if len(kernels) != 1:
        raise ValueError(f"expected one kernel function with a body, got {len(kernels)}")
    return ctx, module, kernels[0]


def build(task: Any, config_passes: list[str], kernel_ir: str | None = None) -> bytes:
    """Object code of the task's kernel (exported as `kernel`) scheduled by `config_passes`.

    `kernel_ir` replaces task.kernel_ir (tests build deliberately broken variants with it)."""
    from xdsl.dialects.builtin import StringAttr

    from compiler.backends.llvm_cpu import compile_object
    from compiler.model import LEVEL_PASSES, run_passes

    ctx, module, kernel = _parse_kernel(_kernel_ir(task, kernel_ir))
    kernel.sym_name = StringAttr("kernel")
    kernel.sym_visibility = None  # exported from the object file
    run_passes(
        ctx, module, [*config_passes, "convert-linalg-to-loops", *LEVEL_PASSES["llvm-dialect"]]
    )
    return compile_object(module)


def kernel_signature(kernel_ir: str) -> list[tuple[tuple[int, ...], str]]:
    """(shape, numpy dtype name) of each memref argument of the kernel, in order."""
    from xdsl.dialects.builtin import MemRefType

    from compiler.backends.llvm_cpu import _NP_DTYPES

    _, _, kernel = _parse_kernel(kernel_ir)
    out = []
    for t in kernel.function_type.inputs.data:
        if not isinstance(t, MemRefType):
            raise ValueError(f"kernel argument of type {t} is not a memref")
        elem = t.element_type
        shape = tuple(t.get_shape())
        strides, offset = t.get_strides(), t.get_offset() or 0
        if offset or tuple(strides or ()) != tuple(MemRefType.strides_for_shape(shape) if shape else ()):
            # a view (subview) argument: the kernel addresses its whole underlying span from the
            # base pointer, so it gets a flat buffer that large (as it has in the real program)
            shape = (offset + sum((n - 1) * int(s) for n, s in zip(shape, strides or ())) + 1,)
        out.append((shape, _NP_DTYPES[type(elem)](elem).name))
    return out


_BUILD_JOBS: list[tuple[Any, list[str], str | None]] = []  # inherited by the forked workers


def _build_job(index: int) -> tuple[bool, Any, float]:
    t0 = time.perf_counter()
    task, passes, ir = _BUILD_JOBS[index]
    try:
        return True, build(task, passes, ir), time.perf_counter() - t0
    except Exception as e:  # a compile error is a result
        return False, f"{type(e).__name__}: {e}", time.perf_counter() - t0


def _build_all(
    jobs: list[tuple[Any, list[str], str | None]], workers: int, timeout_s: float
) -> list[tuple[bool, Any, float]]:
    global _BUILD_JOBS
    _BUILD_JOBS = jobs
    try:
        if workers <= 1 or len(jobs) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            return [_build_job(i) for i in range(len(jobs))]
        pool = multiprocessing.get_context("fork").Pool(min(workers, len(jobs)))
        try:
            pending = [pool.apply_async(_build_job, (i,)) for i in range(len(jobs))]
            deadline = time.monotonic() + timeout_s * max(1, len(jobs) // workers + 1)
            out: list[tuple[bool, Any, float]] = []
            for p in pending:
                try:
                    out.append(p.get(max(0.0, deadline - time.monotonic())))
                except multiprocessing.TimeoutError:
                    out.append((False, f"build did not finish in {timeout_s:g} s", timeout_s))
            return out
        finally:
            pool.terminate()
            pool.join()
    finally:
        _BUILD_JOBS = []


# ----------------------------------------------------------------------------- runner (child)


def _runner_entry(fd: int) -> None:
    if sys.platform == "linux":  # die with the tuner, even while stuck in a hung kernel
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    _runner_main(Connection(fd))


def _runner_main(conn: Connection) -> None:
    """The runner process: load object files, call `kernel`, time it. Imports no xDSL."""
    import ctypes

    import llvmlite.binding as llvm

    from compiler.runtime import aligned_copy

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()

    def target_machine() -> llvm.TargetMachine:  # an engine owns (and frees) its target machine
        return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(),
            opt=3,
            codemodel="jitdefault",
            jit=True,
        )

    empty = f'target triple = "{llvm.get_process_triple()}"\ntarget datalayout = "{target_machine().target_data}"'
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
            inputs[key] = _random_inputs(signature)
        init = inputs[key]
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(empty), target_machine())
        try:
            if b"zrt_parallel_for" in obj:  # resolve the runtime before finalizing (else a crash)
                from compiler import parallel_runtime

                parallel_runtime.load()
                parallel_runtime.set_num_threads(threads)
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            addr = engine.get_function_address("kernel")
            if not addr:
                conn.send(("error", "the object file defines no `kernel`"))
                continue
            cfn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(init)))(addr)
            args = [aligned_copy(a) for a in init]
            ptrs = [a.ctypes.data for a in args]
            t0 = time.perf_counter()
            cfn(*ptrs)  # the checked call, and the warm-up
            first = time.perf_counter() - t0
            outputs = [a.copy() for a in args]
            if number <= 0:  # auto: at least MIN_REPEAT_S per repeat
                number = max(1, int(MIN_REPEAT_S / max(first, 1e-9)))
            # a slow kernel gets fewer repeats rather than a timeout (the budget is half the limit)
            repeat = max(1, min(repeat, int(budget_s / max(first * number, 1e-9))))
            costs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(number):
                    cfn(*ptrs)
                costs.append((time.perf_counter() - t0) / number)
            conn.send(("ok", costs, outputs, time.perf_counter() - t_start))
        except Exception as e:  # a broken object file, not a crash
            conn.send(("error", f"{type(e).__name__}: {e}"))
        finally:
            engine.close()


def _random_inputs(signature: list[tuple[tuple[int, ...], str]]) -> list[np.ndarray]:
    from compiler.runtime import aligned_empty

    rng = np.random.default_rng(INPUT_SEED)
    out = []
    for shape, dtype in signature:
        a = aligned_empty(shape, dtype)
        if np.issubdtype(a.dtype, np.floating):
            a[...] = rng.standard_normal(shape)
        elif a.dtype == np.bool_:
            a[...] = rng.integers(0, 2, shape).astype(bool)
        else:
            a[...] = 0  # indices: zero is in range for any gather
        out.append(a)
    return out


class Runner:
    """A persistent runner process; `run` restarts it after a crash or a timeout."""

    def __init__(self) -> None:
        self._proc: Any = None
        self._conn: Connection | None = None

    def _start(self) -> None:
        # a plain interpreter (not multiprocessing's spawn, which re-imports the caller's __main__)
        # holding one end of a socket pair
        ours, theirs = socket.socketpair()
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        code = "import sys; from autotune.measure import _runner_entry; _runner_entry(int(sys.argv[1]))"
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
        if not conn.poll(_START_TIMEOUT_S):
            proc.kill()
            proc.wait()
            raise RuntimeError("the measurement runner did not start")
        conn.recv()
        self._proc, self._conn = proc, conn

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            assert self._conn is not None
            self._conn.close()
        self._proc, self._conn = None, None

    def run(
        self,
        key: str,
        signature: list[tuple[tuple[int, ...], str]],
        obj: bytes,
        repeat: int,
        number: int,
        timeout_s: float,
        threads: int = 1,
    ) -> tuple[str, Any]:
        """("ok", (costs, outputs, run_s)) | ("runtime_error" | "timeout", message).

        Object code that calls the thread-pool runtime runs its parallel loops on `threads` threads.
        """
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            self._start()
        assert self._conn is not None
        t0 = time.perf_counter()
        try:
            self._conn.send(("run", key, signature, obj, repeat, number, timeout_s / 2, threads))
            if not self._conn.poll(timeout_s):
                self.stop()
                return "timeout", f"no answer within {timeout_s:g} s (killed)"
            msg = self._conn.recv()
        except (EOFError, OSError):
            try:
                code = self._proc.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            if code is not None and code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"signal {-code}"
                return (
                    "runtime_error",
                    f"crashed: killed by {name} after {time.perf_counter() - t0:.3f} s",
                )
            return "runtime_error", f"runner exited with code {code}"
        if msg[0] == "error":
            return "runtime_error", msg[1]
        return "ok", (msg[1], msg[2], msg[3])


_RUNNER: Runner | None = None


def _default_runner() -> Runner:
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = Runner()
        atexit.register(_RUNNER.stop)
    return _RUNNER


# ----------------------------------------------------------------------------- measure

# per (workload, target): the argument signature and the default-schedule outputs
_REFERENCES: dict[
    tuple[str, str], tuple[list[tuple[tuple[int, ...], str]], list[np.ndarray] | None, str]
] = {}


def private_args(kernel_ir: str) -> set[int]:
    """Arguments whose contents are unspecified after the kernel (intermediates of a fused group:
    a fused schedule may never write them), so they are not compared with the reference."""
    from xdsl.dialects.builtin import DenseArrayBase

    _, _, kernel = _parse_kernel(kernel_ir)
    attr = kernel.attributes.get("ziggurat.private_args")
    return set(attr.get_values()) if isinstance(attr, DenseArrayBase) else set()


def _mismatch(
    outputs: list[np.ndarray], reference: list[np.ndarray], rtol: float, atol: float, skip: set[int] = frozenset()
) -> str:
    for i, (got, ref) in enumerate(zip(outputs, reference, strict=True)):
        if i in skip:
            continue
        if got.dtype.kind != "f":
            if not np.array_equal(got, ref):
                return f"argument {i}: differs from the reference"
            continue
        scale = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)) or 1.0
        close = np.isclose(got, ref, rtol=rtol, atol=atol * scale, equal_nan=True)
        if not close.all():
            bad = int((~close).sum())
            err = float(np.nanmax(np.abs(got.astype(np.float64) - ref)))
            return f"argument {i}: {bad}/{close.size} elements differ from the reference (max abs error {err:.3g}, scale {scale:.3g})"
    return ""


def _reference(
    task: Any, built_ok: bool, obj: Any, runner: Runner, timeout_s: float
) -> tuple[list[tuple[tuple[int, ...], str]], list[np.ndarray] | None, str]:
    """(signature, reference outputs or None, why there are none) of the task's default schedule.

    Any failure (the kernel's arguments, its build, a crash, a timeout) is a reason, not an
    exception: the candidates of the task are then all recorded as `reference_error`."""
    try:
        signature = kernel_signature(task.kernel_ir)
    except Exception as e:
        return [], None, f"compile_error: the kernel's arguments: {type(e).__name__}: {e}"
    if not built_ok:
        return signature, None, f"compile_error: {obj}"
    limit = max(timeout_s, _START_TIMEOUT_S)
    kind, payload = runner.run(task.workload_key, signature, obj, 1, 1, limit)
    if kind != "ok":
        return signature, None, f"{kind}: {payload}"
    return signature, payload[1], ""


def measure(
    task: Any,
    candidates: list[list[str]],
    target: str = "cpu",
    repeat: int = 5,
    number: int = 0,
    timeout_s: float = 10.0,
    workers: int = 2,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    kernel_irs: list[str | None] | None = None,
    runner: Runner | None = None,
    threads: int = 1,
) -> list[MeasureResult]:
    """Build every candidate (pass specs) in parallel, then run each in the runner process.

    `number` = calls per timed repeat (0: enough for MIN_REPEAT_S); costs are seconds per call.
    `timeout_s` bounds each candidate's run (and each build). `kernel_irs[i]`, if given, replaces
    the task's kernel IR for candidate i (the reference always uses the task's own IR).
    """
    if target != "cpu":
        raise ValueError(f"measure: unknown target {target!r} (only 'cpu')")
    irs = kernel_irs if kernel_irs is not None else [None] * len(candidates)
    if len(irs) != len(candidates):
        raise ValueError("kernel_irs must have one entry per candidate")
    runner = runner or _default_runner()
    ref_key = (task.workload_key, target)
    need_ref = ref_key not in _REFERENCES
    jobs = [(task, list(c), ir) for c, ir in zip(candidates, irs, strict=True)]
    if need_ref:
        jobs.append((task, REFERENCE_PASSES, None))
    built = _build_all(jobs, workers, timeout_s)

    if need_ref:
        ok, obj, _ = built.pop()
        _REFERENCES[ref_key] = _reference(task, ok, obj, runner, timeout_s)
    signature, reference, ref_error = _REFERENCES[ref_key]
    if reference is None and need_ref:  # once per task; its records carry the reason
        warnings.warn(
            f"measure: no reference output for {task.name} ({ref_error}): "
            "its candidates fail as reference_error",
            stacklevel=2,
        )
    unspecified = private_args(task.kernel_ir) if reference is not None else set()

    results = []
    for ok, obj, build_s in built:
        if not ok:
            results.append(MeasureResult(error_kind="compile_error", error=obj, build_s=build_s))
            continue
        if reference is None:  # nothing could check its output: it is not run, and not correct
            results.append(
                MeasureResult(
                    error_kind="reference_error",
                    error="the task's reference (default schedule) failed, so no output can be "
                    f"checked: {ref_error}",
                    build_s=build_s,
                )
            )
            continue
        kind, payload = runner.run(task.workload_key, signature, obj, repeat, number, timeout_s, threads)
        if kind != "ok":
            results.append(MeasureResult(error_kind=kind, error=payload, build_s=build_s))
            continue
        costs, outputs, run_s = payload
        why = _mismatch(outputs, reference, rtol, atol, unspecified)
        if why:
            runner.stop()  # it may have written where it should not
            results.append(MeasureResult(costs, "wrong_result", why, build_s, run_s))
        else:
            results.append(MeasureResult(costs, None, "", build_s, run_s))
    return results


def clear_references() -> None:
    """Forget the cached default-schedule reference outputs (e.g. after changing the compiler)."""
    _REFERENCES.clear()


__all__ = [
    "ERROR_KINDS",
    "MeasureResult",
    "Runner",
    "build",
    "clear_references",
    "host_target",
    "kernel_signature",
    "measure",
]
