"""The GPU runner: a child process owns the device; it loads GPU artifacts, runs each once
(checked) and times it with device events.

The design is the CPU runner's (runner.py: a plain interpreter over a socket pair, reused across
candidates), for a device: a kernel that faults can lose the context, and a hung kernel is only
stopped by killing the process that launched it, so the parent never touches the device. The
child is restarted after a timeout, a crash, any error it reports (the context may be lost)
and an output the check rejects (the kernel may have written outside its buffers).

Per workload the child makes the arguments once (`random_inputs`: the reference and every
candidate see the same data). Per artifact (gpu_builder.py) it loads the program (the
back end's OpenCLProgram or CudaProgram: build, kernel arguments, limits), copies the
arguments in, launches the kernel sequence once (the checked call) and reads every argument
back; then one warm-up call, then `repeat` samples of `number` back-to-back calls each, timed
on the device (OpenCL profiling events: the sum of each launch's end - start; CUDA: events
around the sample), `number` sized so a sample lasts at least MIN_SAMPLE_S. Costs are seconds
per call (one call = the artifact's whole launch sequence).

The child imports no xDSL itself; the GPU runtimes it loads programs with import the host
plan's module, which does.
"""

from __future__ import annotations

import atexit
import math
import os
import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from autotune.measure.child import ChildRunner, die_with_parent, questions
from autotune.measure.interfaces import (
    RunInputs,
    RunSettings,
    Signature,
    random_inputs,
)

APIS = ("opencl", "cuda")

L2_POLICY = "warm"
"""How the timed calls treat the device caches: warm. The arguments stay resident between the
back-to-back calls of a sample (nothing flushes the L2), as in a model run, where a kernel reads
what the kernel before it has just written. The choice moves timings (flushing the H100's 50 MB
L2 took one kernel from 0.160 to 0.212 ms, ../shared/GPU.md), so it is fixed, and the tuner
stores it in each record."""

MIN_SAMPLE_S = 1e-3
"""Device time a timed sample lasts at least when `RunSettings.number` is 0 (auto)."""


# ----------------------------------------------------------------------------- the child


class _OpenCL:
    """The device of opencl_runtime.select_device ($ZIGGURAT_OPENCL_DEVICE, else the first GPU,
    else the first device), run through OpenCLProgram (its own context and in-order queue with
    profiling)."""

    def __init__(self) -> None:
        from compiler.backends.gpu.opencl_runtime import select_device

        self.device = select_device()  # CompileError naming why OpenCL cannot run

    def info(self) -> dict[str, Any]:
        import pyopencl as cl

        d = self.device
        kind = next(
            (n for n in ("GPU", "CPU", "ACCELERATOR") if d.type & getattr(cl.device_type, n)),
            "OTHER",
        )
        return {
            "api": "opencl",
            "name": d.name.strip(),
            "vendor": d.vendor.strip(),
            "platform": d.platform.name.strip(),
            "driver_version": d.driver_version.strip(),
            "opencl_version": d.version.strip(),
            "type": kind,
            "max_work_group_size": int(d.max_work_group_size),
            "compute_units": int(d.max_compute_units),
            "global_memory_bytes": int(d.global_mem_size),
        }

    def load(self, plan: Any, source: str) -> Any:
        from compiler.backends.gpu.opencl_runtime import OpenCLProgram

        return OpenCLProgram(plan, source, self.device)

    def close(self, program: Any) -> None:
        pass  # pyopencl releases the context and buffers with the program object


class _Cuda:
    """Device $ZIGGURAT_CUDA_DEVICE (default 0) of pycuda, run through CudaProgram (the
    device's primary context, the default stream)."""

    def __init__(self) -> None:
        from compiler.backends.gpu.cuda_runtime import DEVICE_ENV, cuda_available

        reason = cuda_available()
        if reason is not None:
            raise RuntimeError(f"CUDA: {reason}")
        import pycuda.driver as cuda

        self.device = cuda.Device(int(os.environ.get(DEVICE_ENV, "0")))

    def info(self) -> dict[str, Any]:
        import pycuda.driver as cuda

        d, attr = self.device, cuda.device_attribute
        major, minor = d.compute_capability()
        return {
            "api": "cuda",
            "name": d.name(),
            "vendor": "NVIDIA",
            "driver_version": str(cuda.get_driver_version()),
            "compute_capability": f"{major}.{minor}",
            "max_work_group_size": int(d.get_attribute(attr.MAX_THREADS_PER_BLOCK)),
            "compute_units": int(d.get_attribute(attr.MULTIPROCESSOR_COUNT)),
            "global_memory_bytes": int(d.total_memory()),
        }

    def load(self, plan: Any, source: str) -> Any:
        from compiler.backends.gpu.cuda_runtime import CudaProgram

        return CudaProgram(plan, source)

    def close(self, program: Any) -> None:
        program.close()


def _measure(
    device: Any,
    artifact: bytes,
    api: str,
    signature: Signature,
    init: list[np.ndarray],
    repeat: int,
    number: int,
    budget_s: float,
) -> tuple[list[float], list[np.ndarray]]:
    """(seconds per call of each sample, every argument after the checked call)."""
    from autotune.measure.gpu_builder import read_artifact

    doc, plan = read_artifact(artifact)
    if doc["api"] != api:
        raise ValueError(f"an artifact for {doc['api']} given to the {api} runner")
    if [(tuple(s), d) for s, d in doc["arguments"]] != [(tuple(s), d) for s, d in signature]:
        raise ValueError(f"the artifact's arguments {doc['arguments']} are not {signature}")
    program = device.load(plan, doc["source"])
    try:
        program.copy_in(init)
        program.launch_all(1)  # the checked call
        outputs = program.read_inputs()
        t0 = time.perf_counter()
        first = program.launch_all(1)  # the warm-up
        wall = time.perf_counter() - t0  # launching costs the host more than tiny kernels take
        if number <= 0:
            number = math.ceil(MIN_SAMPLE_S / max(first, 1e-9))
            number = max(1, min(number, int(budget_s / max(wall * repeat, 1e-9))))
        # a slow kernel gets fewer samples rather than a timeout (the budget is half the limit)
        repeat = max(1, min(repeat, int(budget_s / max(wall * number, 1e-9))))
        # at least the clocks' 1 ns tick: a sequence whose grids are all empty reads 0
        costs = [max(program.launch_all(number) / number, 1e-9) for _ in range(repeat)]
        return costs, outputs
    finally:
        device.close(program)


def _child_entry(fd: int, api: str) -> None:
    """The runner process: ("failed", why) or ("ready",), then answer each ("run", ...) with
    ("ok", (costs, outputs, run_s)) and each ("info",) with ("ok", device_info), or
    ("error", message), until ("exit",) or the parent goes away."""
    die_with_parent()
    conn = Connection(fd)
    try:
        device = _OpenCL() if api == "opencl" else _Cuda()
    except Exception as e:
        conn.send(("failed", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready",))
    inputs: dict[str, list[np.ndarray]] = {}  # the current workload's only
    for msg in questions(conn):
        t0 = time.perf_counter()
        try:
            if msg[0] == "info":
                reply: tuple[str, Any] = ("ok", device.info())
            else:
                _, key, signature, artifact, repeat, number, budget_s = msg
                if key not in inputs:
                    inputs = {key: random_inputs(signature)}
                costs, outputs = _measure(
                    device, artifact, api, signature, inputs[key], repeat, number, budget_s
                )
                reply = ("ok", (costs, outputs, time.perf_counter() - t0))
        except Exception as e:  # a build error, a device error, a lost context
            reply = ("error", f"{type(e).__name__}: {e}")
        conn.send(reply)


# ----------------------------------------------------------------------------- the parent


class GpuRunner(ChildRunner):
    """A persistent runner process for `api` (opencl or cuda) on this machine; `run` restarts
    it after a crash, a timeout, an error or an output its check rejects (`settings.threads`
    and a baseline do not apply)."""

    l2_policy = L2_POLICY

    def __init__(self, api: str) -> None:
        if api not in APIS:
            raise ValueError(f"GpuRunner: unknown api {api!r} (known: {', '.join(APIS)})")
        self.api = api
        super().__init__(
            "import sys; from autotune.measure.gpu_runner import _child_entry; "
            f"_child_entry(int(sys.argv[1]), {api!r})"
        )

    def device_info(self) -> dict[str, Any]:
        """The device's name, vendor, driver and API version, limits (asked of the child);
        RuntimeError when it cannot run here."""
        kind, payload = self._ask(("info",), 60.0)
        if kind != "ok":
            raise RuntimeError(f"{self.api}: {payload}")
        return dict(payload)

    def _run_one(
        self, inputs: RunInputs, artifact: bytes, settings: RunSettings
    ) -> tuple[str, Any]:
        question = (
            "run",
            inputs.key,
            inputs.signature,
            artifact,
            settings.repeat,
            settings.number,
            settings.timeout_s / 2,
        )
        return self._ask(question, settings.timeout_s)

    def _ask(self, msg: tuple[Any, ...], timeout_s: float) -> tuple[str, Any]:
        """("ok", the child's answer) or ("runtime_error" | "timeout", why); after anything
        but "ok" the child is gone (the next question starts a fresh one)."""
        kind, reply = self.child.ask(msg, timeout_s)
        if kind != "reply":
            return kind, reply
        if reply[0] != "ok":
            self.stop()  # a device error may have lost the context
            return "runtime_error", reply[1]
        return "ok", reply[1]


_RUNNERS: dict[str, GpuRunner] = {}


def default_gpu_runner(api: str) -> GpuRunner:
    """This process's runner for `api` (started at its first run, stopped at exit)."""
    if api not in _RUNNERS:
        _RUNNERS[api] = GpuRunner(api)
        atexit.register(_RUNNERS[api].stop)
    return _RUNNERS[api]


def device_info(api: str) -> dict[str, Any]:
    """What the tuner stores in each record about the device `api` runs on here (name, vendor,
    driver version, OpenCL version or compute capability, max work-group size, compute units,
    memory), asked of this process's runner for `api` (the parent holds no context).
    RuntimeError naming why when `api` cannot run here."""
    return default_gpu_runner(api).device_info()
