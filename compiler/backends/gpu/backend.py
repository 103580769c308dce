"""The "opencl" and "cuda" backends: buffers level -> gpu level for a preset -> kernels printed as
OpenCL C or CUDA C (+ PTX by nvcc for CUDA) and the host plan -> a program on the device.

Emitting needs no device: a CUDA model compiles (nvcc -ptx) and saves as a package on a machine
without a GPU, for the preset "cuda" and cuda_check.DEFAULT_ARCH; an OpenCL one, with no OpenCL
device here, for the preset "opencl-gpu". Loading needs the device (`check_available` says why
not). Packages: compiler/package/gpu.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from compiler.backends.base import Backend, CompileOptions, Program
from compiler.backends.gpu.availability import unavailable_reason
from compiler.backends.gpu.plan import GpuArtifact
from compiler.package import gpu as gpu_package

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp


class GpuBackend(Backend[GpuArtifact]):
    """One GPU API; `name` is the API ("opencl", "cuda") and its packages' backend."""

    layouts: ClassVar[tuple[str, ...] | None] = ("auto", "NCHW")

    def unavailable_reason(self) -> str | None:
        return unavailable_reason(self.name)

    def lower(
        self, module: ModuleOp, ctx: Context, timings: dict[str, float], options: CompileOptions
    ) -> ModuleOp:
        from compiler.lowering import lower_to_gpu

        preset = self.resolve_preset(options.preset)
        assert preset is not None
        return lower_to_gpu(
            module, preset, ctx, timings, optimize=options.optimize, schedules=options.schedules
        )

    def emit(
        self, module: ModuleOp, ctx: Context, num_inputs: int, options: CompileOptions
    ) -> GpuArtifact:
        from compiler.backends.gpu.compile import kernel_source
        from compiler.backends.gpu.host_plan import build_plan

        preset = self.resolve_preset(options.preset)
        assert preset is not None
        plan = build_plan(module, num_inputs)
        return self.finish(GpuArtifact(self.name, preset, kernel_source(module, self.name), plan))

    def finish(self, artifact: GpuArtifact) -> GpuArtifact:
        """The API's additions to an emitted artifact (the device it was built for, ...)."""
        return artifact

    def package_target(self, artifact: GpuArtifact) -> dict[str, Any]:
        return gpu_package.target(artifact)

    def pack(self, path: str, artifact: GpuArtifact) -> tuple[dict[str, Any], dict[str, bytes]]:
        return gpu_package.pack(path, self.name, artifact)

    def unpack(
        self, path: str, manifest: dict[str, Any], parts: dict[str, memoryview], threads: int
    ) -> Program:
        return gpu_package.unpack(path, self.name, manifest, parts)


class OpenCLBackend(GpuBackend):
    name = "opencl"
    package_backend = "opencl"

    def resolve_preset(self, preset: str | None) -> str | None:
        if preset is not None:
            return preset
        if self.unavailable_reason() is not None:
            return "opencl-gpu"
        from compiler.backends.gpu.compile import preset_for

        return preset_for("opencl")

    def finish(self, artifact: GpuArtifact) -> GpuArtifact:
        """With this machine's OpenCL device, where it has one."""
        if self.unavailable_reason() is None:
            from compiler.backends.gpu.opencl_runtime import select_device

            return replace(artifact, device=select_device().name.strip())
        return artifact

    def load(self, artifact: GpuArtifact, threads: int) -> Program:
        from compiler.backends.gpu.opencl_runtime import OpenCLProgram

        return OpenCLProgram(artifact.plan, artifact.source)


class CudaBackend(GpuBackend):
    name = "cuda"
    package_backend = "cuda"

    def resolve_preset(self, preset: str | None) -> str | None:
        return preset or "cuda"

    def finish(self, artifact: GpuArtifact) -> GpuArtifact:
        """With the PTX nvcc compiles the source to: for this machine's GPU's architecture,
        or cuda_check.DEFAULT_ARCH where there is none."""
        from compiler.backends.gpu.cuda_check import DEFAULT_ARCH, cuda_to_ptx

        arch, device = DEFAULT_ARCH, ""
        if self.unavailable_reason() is None:
            from compiler.backends.gpu.cuda_runtime import device_arch, device_name

            arch, device = device_arch(), device_name()
        return replace(artifact, ptx=cuda_to_ptx(artifact.source, arch), arch=arch, device=device)

    def load(self, artifact: GpuArtifact, threads: int) -> Program:
        from compiler.backends.gpu.cuda_runtime import CudaProgram

        return CudaProgram(artifact.plan, artifact.source, ptx=artifact.ptx, arch=artifact.arch)
