"""`ziggurat-opt -t opencl|cuda`: a gpu-level module's kernels printed as OpenCL C or CUDA C, as
mlir-translate prints a module in another language (xDSL's output targets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from compiler.backends.gpu.compile import kernel_source


@dataclass(frozen=True)
class OpenCLTarget(Target):
    name: ClassVar[str] = "opencl"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(kernel_source(module, "opencl"))


@dataclass(frozen=True)
class CudaTarget(Target):
    name: ClassVar[str] = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(kernel_source(module, "cuda"))


TARGETS: dict[str, type[Target]] = {t.name: t for t in (OpenCLTarget, CudaTarget)}
