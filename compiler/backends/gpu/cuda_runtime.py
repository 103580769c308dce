"""A HostPlan and its kernels' CUDA C, run through pycuda behind the CPU's executable interface
(`function("main")(*inputs, *outputs)`); the CUDA twin of opencl_runtime.py.

Once, at construction: the build (pycuda's SourceModule, nvcc for the current device; or, given
PTX, as a CUDA package carries it, the driver's JIT through module_from_buffer), one
prepared function per launch with its pointer arguments worked out (the root buffer's device
address plus the BufferRef's byte shift: the KERNEL PARAMETER CONVENTION's `T* argk`), the
weights' upload, one device allocation per input, per output and for the arena. A call copies
the inputs in, launches on the default stream and copies the outputs back (blocking).

Everything runs in the device's primary context, made current around each use (push/pop), so
programs share it and any thread may call. pycuda is imported lazily: the module imports (and
`cuda_available` answers) without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from math import prod
from typing import Any

import numpy as np

from compiler.backends.gpu.cuda_check import nvcc_path
from compiler.backends.gpu.device_program import DeviceProgram
from compiler.backends.gpu.plan import BufferRef, HostPlan
from compiler.errors import CompileError

DEVICE_ENV = "ZIGGURAT_CUDA_DEVICE"
"""Index of the CUDA device to run on (default 0)."""

_contexts: dict[int, tuple[Any, Any]] = {}  # device index -> (device, its primary context)


def cuda_available() -> str | None:
    """None when pycuda imports, cuInit succeeds and a device exists, else why not (one line)."""
    try:
        import pycuda.driver as cuda
    except ModuleNotFoundError as e:
        if (e.name or "").startswith("pycuda"):
            return "pycuda is not installed (pip install pycuda needs the CUDA driver)"
        return f"pycuda cannot be imported: {e}"
    except ImportError as e:  # e.g. libcuda.so missing
        return f"pycuda cannot be imported: {e}"
    try:
        cuda.init()
    except Exception as e:
        return f"no CUDA device: cuInit failed: {e}".replace("\n", " ")
    try:
        count = cuda.Device.count()
    except Exception as e:
        return f"no CUDA device: {e}".replace("\n", " ")
    return None if count else "no CUDA device: the driver reports none"


def device_arch(index: int | None = None) -> str:
    """The SM architecture (`sm_90`) of CUDA device `index` (default: as CudaProgram picks)."""
    device, _ = _device_context(index)
    major, minor = device.compute_capability()
    return f"sm_{major}{minor}"


def device_name(index: int | None = None) -> str:
    """The name of CUDA device `index` (default: as CudaProgram picks)."""
    device, _ = _device_context(index)
    return str(device.name())


def _arch_number(arch: str) -> int | None:
    """`sm_90` -> 90 (None when it is not of that form)."""
    digits = arch.removeprefix("sm_").removeprefix("compute_")
    return int(digits) if digits.isdigit() else None


def _device_context(index: int | None) -> tuple[Any, Any]:
    """Device `index` (default: $ZIGGURAT_CUDA_DEVICE, else 0) and its primary context."""
    reason = cuda_available()
    if reason is not None:
        raise CompileError(f"CUDA: {reason}")
    import pycuda.driver as cuda

    if index is None:
        try:
            index = int(os.environ.get(DEVICE_ENV, "0"))
        except ValueError:
            raise CompileError(f"CUDA: {DEVICE_ENV} must be a device index") from None
    if index not in _contexts:
        count = cuda.Device.count()
        if not 0 <= index < count:
            raise CompileError(f"CUDA: no device {index}; this machine has {count}")
        device = cuda.Device(index)
        _contexts[index] = (device, device.retain_primary_context())
    return _contexts[index]


class CudaProgram(DeviceProgram):
    """`plan`'s @main with the kernels of `source` (CUDA C, `extern "C" __global__`) on CUDA
    device `device` (default: $ZIGGURAT_CUDA_DEVICE, else 0). Given `ptx` (the source compiled
    by cuda_check.cuda_to_ptx for `arch`), that is loaded instead and nvcc is not run.
    CompileError for an nvcc error (with its diagnostics), PTX for a newer architecture than
    the device's, a kernel missing from the source or a block size or grid the device or kernel
    cannot take."""

    def __init__(
        self,
        plan: HostPlan,
        source: str,
        device: int | None = None,
        options: Sequence[str] = (),
        ptx: str | None = None,
        arch: str | None = None,
    ):
        t0 = time.perf_counter()
        self.device, self._context = _device_context(device)  # CompileError without CUDA
        import pycuda.driver as cuda

        self.plan = plan
        self.source = source
        self.ptx = ptx
        self.arch = arch
        self.device_name: str = self.device.name()
        self._allocations: list[Any] = []
        with self._active():
            self.module = self._build(list(options))
            t1 = time.perf_counter()
            self.weights = {n: self._upload(w) for n, w in plan.weights.items()}
            self.inputs = [self._alloc(s.nbytes) for s in plan.inputs]
            self.outputs = [self._alloc(s.nbytes) for s in plan.outputs]
            self.arena = self._alloc(plan.arena_bytes)
            self.functions = [self._function(i) for i in range(len(plan.launches))]
            self.pointers = [
                tuple(self._pointer(ref) for ref in launch.args) for launch in plan.launches
            ]
            cuda.Context.synchronize()
        self.timings = {"build_s": t1 - t0, "upload_s": time.perf_counter() - t1}

    @property
    def queue(self) -> None:
        """The stream the launches go to: None, the default stream."""
        return None

    @contextmanager
    def _active(self) -> Iterator[None]:
        import pycuda.driver as cuda

        self._context.push()
        try:
            yield
        finally:
            cuda.Context.pop()

    def _build(self, options: list[str]) -> Any:
        import pycuda.driver as cuda
        from pycuda.compiler import SourceModule

        if self.ptx is not None:
            return self._load_ptx(self.ptx)
        try:
            return SourceModule(
                self.source, nvcc=nvcc_path() or "nvcc", no_extern_c=True, options=options
            )
        except cuda.CompileError as e:
            raise CompileError(f"CUDA build failed for {self.device_name}:\n{e}") from None
        except OSError as e:  # no nvcc
            raise CompileError(f"CUDA build failed: cannot run nvcc: {e}") from None
        except cuda.Error as e:  # module load: too much shared memory, wrong arch...
            raise CompileError(
                f"CUDA: loading the module failed on {self.device_name}: {e}"
            ) from None

    def _load_ptx(self, ptx: str) -> Any:
        """The PTX JIT-compiled by the driver for this device (no nvcc), if it is for this
        device's architecture or an older one."""
        import pycuda.driver as cuda

        major, minor = self.device.compute_capability()
        wanted = _arch_number(self.arch or "")
        if wanted is not None and wanted > major * 10 + minor:
            raise CompileError(
                f"CUDA: the PTX is for {self.arch}; {self.device_name} is sm_{major}{minor}"
            )
        try:
            return cuda.module_from_buffer(ptx.encode())
        except cuda.Error as e:
            raise CompileError(
                f"CUDA: loading the PTX failed on {self.device_name}: {e}".replace("\n", " ")
            ) from None

    def _alloc(self, nbytes: int) -> Any:
        import pycuda.driver as cuda

        buf = cuda.mem_alloc(max(nbytes, 1))  # cuMemAlloc refuses 0 bytes
        self._allocations.append(buf)
        return buf

    def _upload(self, data: np.ndarray) -> Any:
        import pycuda.driver as cuda

        buf = self._alloc(data.nbytes)
        if data.nbytes:
            cuda.memcpy_htod(buf, np.ascontiguousarray(data))
        return buf

    def _function(self, i: int) -> Any:
        """Launch i's kernel, prepared for its pointer arguments, its block and grid checked."""
        import pycuda.driver as cuda

        launch = self.plan.launches[i]
        where = f"CUDA: kernel {launch.kernel} (launch {i})"
        try:
            fn = self.module.get_function(launch.kernel)
        except cuda.Error as e:
            raise CompileError(f'{where} is not in the source (extern "C"?): {e}') from None
        attr, dev = cuda.device_attribute, self.device
        limits = [
            ("the device's max threads per block", dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)),
            (
                "the kernel's max threads per block",
                fn.get_attribute(cuda.function_attribute.MAX_THREADS_PER_BLOCK),
            ),
        ]
        for what, limit in limits:
            if prod(launch.block) > limit:
                raise CompileError(
                    f"{where} has block {list(launch.block)} = {prod(launch.block)} threads, "
                    f"more than {what} ({limit}) on {self.device_name}"
                )
        block_max = [attr.MAX_BLOCK_DIM_X, attr.MAX_BLOCK_DIM_Y, attr.MAX_BLOCK_DIM_Z]
        grid_max = [attr.MAX_GRID_DIM_X, attr.MAX_GRID_DIM_Y, attr.MAX_GRID_DIM_Z]
        for axis in range(3):
            for what, size, limit in (
                ("block", launch.block, dev.get_attribute(block_max[axis])),
                ("grid", launch.grid, dev.get_attribute(grid_max[axis])),
            ):
                if size[axis] > limit:
                    raise CompileError(
                        f"{where} has {what} {list(size)}: axis {axis} is over the device's "
                        f"limit {limit}"
                    )
        fn.prepare("P" * len(launch.args))
        return fn

    def _pointer(self, ref: BufferRef) -> int:
        if ref.kind == "input":
            buf = self.inputs[int(ref.key)]
        elif ref.kind == "output":
            buf = self.outputs[int(ref.key)]
        elif ref.kind == "weight":
            buf = self.weights[str(ref.key)]
        else:
            buf = self.arena
        return int(buf) + ref.byte_offset

    def _launch(self, i: int) -> bool:
        """Launch i on the default stream (False when its grid is empty)."""
        launch = self.plan.launches[i]
        if not prod(launch.grid):
            return False
        self.functions[i].prepared_call(launch.grid, launch.block, *self.pointers[i])
        return True

    def _copy_in(self, inputs: Sequence[np.ndarray]) -> None:
        import pycuda.driver as cuda

        for buf, a in zip(self.inputs, inputs, strict=True):
            if a.nbytes:
                cuda.memcpy_htod(buf, a)

    def copy_in(self, inputs: list[np.ndarray]) -> None:
        with self._active():
            self._copy_in(inputs)

    def launch_all(self, times: int = 1) -> float:
        """Device seconds: CUDA events around the whole sequence (gaps between launches count)."""
        import pycuda.driver as cuda

        with self._active():
            start, end = cuda.Event(), cuda.Event()
            start.record()
            for _ in range(times):
                for i in range(len(self.functions)):
                    self._launch(i)
            end.record()
            end.synchronize()
            return float(end.time_since(start)) * 1e-3

    def read_inputs(self) -> list[np.ndarray]:
        import pycuda.driver as cuda

        out = [np.empty(s.shape, s.dtype) for s in self.plan.inputs]
        with self._active():
            for buf, a in zip(self.inputs, out, strict=True):
                if a.nbytes:
                    cuda.memcpy_dtoh(a, buf)
        return out

    def run(self, *arrays: np.ndarray) -> None:
        """@main: the inputs, then the output arrays, which receive the results."""
        import pycuda.driver as cuda

        self.plan.check_arguments(arrays)
        n = len(self.plan.inputs)
        with self._active():
            self._copy_in(arrays[:n])
            for i in range(len(self.functions)):
                self._launch(i)
            for buf, a in zip(self.outputs, arrays[n:], strict=True):
                if a.nbytes:
                    cuda.memcpy_dtoh(a, buf)
            cuda.Context.synchronize()

    def profile(self, feeds: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, float]]:
        """Each launch's kernel name and device time in seconds (CUDA events around it), on the
        inputs `feeds` (in order, or by name). The outputs are not copied back."""
        import pycuda.driver as cuda

        inputs = self.plan.input_arrays(feeds)
        marks: list[tuple[str, Any, Any]] = []  # kernel, start and end events (None: no launch)
        with self._active():
            self._copy_in(inputs)
            for i, launch in enumerate(self.plan.launches):
                start, end = cuda.Event(), cuda.Event()
                start.record()
                launched = self._launch(i)
                end.record()
                marks.append(
                    (launch.kernel, start, end) if launched else (launch.kernel, None, None)
                )
            cuda.Context.synchronize()
            return [
                (name, 0.0 if start is None else end.time_since(start) * 1e-3)
                for name, start, end in marks
            ]

    def close(self) -> None:
        """Free the device memory now rather than when collected."""
        with self._active():
            for buf in self._allocations:
                buf.free()
        self._allocations.clear()
