"""A HostPlan and its kernels' OpenCL C, run through pyopencl behind the CPU's executable
interface (`function("main")(*inputs, *outputs)`).

Everything that does not change between calls happens once, at construction: the build, one
kernel object per launch with its arguments set (each BufferRef is the buffer and its byte shift,
the KERNEL PARAMETER CONVENTION's `argk_buf, argk_byte_offset`), the weights' upload, and one
device buffer per input, per output and for the arena. A call copies the inputs in, enqueues
the launches on one in-order queue and copies the outputs back.

pyopencl is imported lazily: the module imports (and `opencl_available` answers) without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

import numpy as np

from compiler.backends.gpu.device_program import DeviceProgram
from compiler.backends.gpu.plan import BufferRef, HostPlan
from compiler.errors import CompileError

DEVICE_ENV = "ZIGGURAT_OPENCL_DEVICE"
"""`platform:device` indices (e.g. `0:1`) of the OpenCL device to run on."""


def opencl_available() -> str | None:
    """None when OpenCL can run here, else why not (one line)."""
    try:
        import pyopencl as cl
    except ImportError as e:
        return f"pyopencl is not installed (pip install pyopencl): {e}"
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        return f"no OpenCL platform: {e}"
    if not platforms:
        return "no OpenCL platform"
    if not any(_devices(p) for p in platforms):
        return f"no OpenCL device on the platforms {[p.name for p in platforms]}"
    return None


def _devices(platform: Any) -> list[Any]:
    import pyopencl as cl

    try:
        return list(platform.get_devices())
    except cl.Error:  # DEVICE_NOT_FOUND
        return []


def _pyopencl() -> Any:
    """The pyopencl module; CompileError (with opencl_available's reason) when OpenCL cannot run."""
    reason = opencl_available()
    if reason is not None:
        raise CompileError(f"OpenCL: {reason}")
    import pyopencl

    return pyopencl


def select_device(spec: str | None = None) -> Any:
    """The OpenCL device named by `spec` or $ZIGGURAT_OPENCL_DEVICE (`platform:device`), else
    the first GPU, else the first device of the first platform that has one."""
    cl = _pyopencl()
    platforms = cl.get_platforms()
    spec = spec if spec is not None else os.environ.get(DEVICE_ENV)
    if spec:
        try:
            p, d = (int(x) for x in spec.split(":"))
            if p < 0 or d < 0:
                raise IndexError(spec)
            return _devices(platforms[p])[d]
        except (ValueError, IndexError):
            have = [
                f"{i}:{j} {dev.name}"
                for i, pl in enumerate(platforms)
                for j, dev in enumerate(_devices(pl))
            ]
            raise CompileError(
                f"OpenCL: no device '{spec}' (from {DEVICE_ENV}, `platform:device`); have {have}"
            ) from None
    devices = [d for p in platforms for d in _devices(p)]
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices)[0]


def _buffer(cl: Any, context: Any, nbytes: int, data: np.ndarray | None = None) -> Any:
    """A read-write device buffer of at least one byte (OpenCL refuses empty ones)."""
    flags = cl.mem_flags.READ_WRITE
    if data is not None and data.nbytes:
        return cl.Buffer(context, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    return cl.Buffer(context, flags, size=max(nbytes, 1))


class OpenCLProgram(DeviceProgram):
    """`plan`'s @main with the kernels of `source` (OpenCL C) on `device` (default:
    `select_device()`). CompileError for a build error (with the log), a kernel missing from
    the source or a block size the device or kernel cannot take."""

    def __init__(
        self, plan: HostPlan, source: str, device: Any = None, options: Sequence[str] = ()
    ):
        cl = _pyopencl()
        t0 = time.perf_counter()
        self.plan = plan
        self.source = source
        self.device = device if device is not None else select_device()
        self.device_name: str = self.device.name.strip()
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(
            self.context, self.device, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        try:
            self.program = cl.Program(self.context, source).build(options=list(options))
        except cl.Error as e:
            raise CompileError(f"OpenCL build failed on {self.device_name}:\n{e}") from None
        t1 = time.perf_counter()
        self.weights = {n: _buffer(cl, self.context, w.nbytes, w) for n, w in plan.weights.items()}
        self.inputs = [_buffer(cl, self.context, s.nbytes) for s in plan.inputs]
        self.outputs = [_buffer(cl, self.context, s.nbytes) for s in plan.outputs]
        self.arena = _buffer(cl, self.context, plan.arena_bytes)
        self.kernels = [self._kernel(cl, i) for i in range(len(plan.launches))]
        self.queue.finish()
        self.timings = {"build_s": t1 - t0, "upload_s": time.perf_counter() - t1}

    def _kernel(self, cl: Any, i: int) -> Any:
        """Launch i's kernel object, its arguments set (buffer and byte shift for each)."""
        launch = self.plan.launches[i]
        try:
            kernel = cl.Kernel(self.program, launch.kernel)
        except cl.Error as e:
            raise CompileError(
                f"OpenCL: kernel {launch.kernel} (launch {i}) is not in the source: {e}"
            ) from None
        limits = [
            ("the device's max work-group size", self.device.max_work_group_size),
            (
                "the kernel's CL_KERNEL_WORK_GROUP_SIZE",
                kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device),
            ),
        ]
        for what, limit in limits:
            if prod(launch.block) > limit:
                raise CompileError(
                    f"OpenCL: kernel {launch.kernel} (launch {i}) has block {list(launch.block)} "
                    f"= {prod(launch.block)} work-items, more than {what} ({limit}) on "
                    f"{self.device_name}"
                )
        for axis, (b, limit) in enumerate(zip(launch.block, self.device.max_work_item_sizes)):
            if b > limit:
                raise CompileError(
                    f"OpenCL: kernel {launch.kernel} (launch {i}) has block {list(launch.block)}: "
                    f"axis {axis} is over the device's max work-item size {limit}"
                )
        args: list[Any] = []
        for ref in launch.args:
            args += [self._buffer_of(ref), np.uint64(ref.byte_offset)]
        try:
            kernel.set_args(*args)
        except cl.Error as e:
            raise CompileError(
                f"OpenCL: kernel {launch.kernel} (launch {i}) does not take {len(launch.args)} "
                f"buffer arguments as (__global T*, ulong) pairs: {e}"
            ) from None
        return kernel

    def _buffer_of(self, ref: BufferRef) -> Any:
        if ref.kind == "input":
            return self.inputs[int(ref.key)]
        if ref.kind == "output":
            return self.outputs[int(ref.key)]
        if ref.kind == "weight":
            return self.weights[str(ref.key)]
        return self.arena

    def _enqueue(self, i: int) -> Any:
        """Enqueue launch i (None when its grid is empty)."""
        import pyopencl as cl

        launch = self.plan.launches[i]
        if not prod(launch.grid):
            return None
        size = tuple(g * b for g, b in zip(launch.grid, launch.block))
        return cl.enqueue_nd_range_kernel(self.queue, self.kernels[i], size, launch.block)

    def _copy_in(self, inputs: Sequence[np.ndarray]) -> None:
        import pyopencl as cl

        for buf, a in zip(self.inputs, inputs, strict=True):
            if a.nbytes:
                cl.enqueue_copy(self.queue, buf, a, is_blocking=False)

    def copy_in(self, inputs: list[np.ndarray]) -> None:
        self._copy_in(inputs)
        self.queue.finish()

    def launch_all(self, times: int = 1) -> float:
        """Device seconds: the sum of the launches' profiling events (queue gaps excluded)."""
        events = [self._enqueue(i) for _ in range(times) for i in range(len(self.kernels))]
        self.queue.finish()
        return sum(e.profile.end - e.profile.start for e in events if e is not None) * 1e-9

    def read_inputs(self) -> list[np.ndarray]:
        import pyopencl as cl

        out = [np.empty(s.shape, s.dtype) for s in self.plan.inputs]
        for buf, a in zip(self.inputs, out, strict=True):
            if a.nbytes:
                cl.enqueue_copy(self.queue, a, buf, is_blocking=False)
        self.queue.finish()
        return out

    def run(self, *arrays: np.ndarray) -> None:
        """@main: the inputs, then the output arrays, which receive the results."""
        import pyopencl as cl

        self.plan.check_arguments(arrays)
        n = len(self.plan.inputs)
        self._copy_in(arrays[:n])
        for i in range(len(self.kernels)):
            self._enqueue(i)
        for buf, a in zip(self.outputs, arrays[n:], strict=True):
            if a.nbytes:
                cl.enqueue_copy(self.queue, a, buf, is_blocking=False)
        self.queue.finish()

    def profile(self, feeds: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, float]]:
        """Each launch's kernel name and device time in seconds (OpenCL profiling events), on
        the inputs `feeds` (in order, or by name). The outputs are not copied back."""
        inputs = self.plan.input_arrays(feeds)  # alive until the queue is done
        self._copy_in(inputs)
        events = [(launch.kernel, self._enqueue(i)) for i, launch in enumerate(self.plan.launches)]
        self.queue.finish()
        return [
            (name, 0.0 if ev is None else (ev.profile.end - ev.profile.start) * 1e-9)
            for name, ev in events
        ]

    def close(self) -> None:
        """Release the device buffers now rather than when collected (it cannot run after)."""
        if self.arena is None:
            return
        for buf in [*self.weights.values(), *self.inputs, *self.outputs, self.arena]:
            buf.release()
        self.weights, self.inputs, self.outputs, self.arena = {}, [], [], None
