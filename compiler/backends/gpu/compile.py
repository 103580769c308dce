"""A gpu-level module -> kernel source -> a loaded program on an OpenCL or CUDA device.

`ziggurat compile --emit opencl|cuda` prints `kernel_source`; the model API loads
`load_program`, which has the CPU program's interface (`function("main")(*inputs, *outputs)`).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp

from compiler.backends.gpu.availability import unavailable_reason
from compiler.errors import CompileError

APIS = ("opencl", "cuda")
"""The GPU targets of the model API and the CLI (`--target`), named by their runtime."""


def check_available(api: str) -> None:
    """A CompileError naming the reason when `api` cannot run here (before compiling)."""
    if api not in APIS:
        raise CompileError(f"unknown GPU target '{api}' (available: {', '.join(APIS)})")
    reason = unavailable_reason(api)
    if reason is not None:
        raise CompileError(f"target '{api}' cannot run on this machine: {reason}")


def preset_for(api: str) -> str:
    """The schedule preset (passes/schedule/gpu_target.py) for the device `api` would run on:
    CUDA devices are SIMT GPUs; an OpenCL device may be a CPU (PoCL) or a GPU."""
    if api == "cuda":
        return "cuda"
    import pyopencl as cl

    from compiler.backends.gpu.opencl_runtime import select_device

    return "opencl-cpu" if select_device().type & cl.device_type.CPU else "opencl-gpu"


def kernel_module(module: ModuleOp) -> gpu.ModuleOp:
    found = [op for op in module.body.block.ops if isinstance(op, gpu.ModuleOp)]
    if len(found) != 1:
        raise CompileError(
            f"expected one gpu.module at the gpu level, found {len(found)} "
            "(run convert-linalg-to-gpu first)"
        )
    return found[0]


def kernel_source(module: ModuleOp, api: str) -> str:
    """The module's kernels as OpenCL C or CUDA C."""
    from compiler.backends.gpu.c_printer import print_module

    return print_module(kernel_module(module), api)


def load_program(module: ModuleOp, api: str, num_inputs: int) -> Any:
    """The module's kernels compiled and loaded, weights uploaded, ready to run @main (whose
    first `num_inputs` arguments are the model's inputs, the rest its outputs)."""
    from compiler.backends.gpu.host_plan import build_plan

    plan = build_plan(module, num_inputs)
    source = kernel_source(module, api)
    if api == "cuda":
        from compiler.backends.gpu.cuda_runtime import CudaProgram

        return CudaProgram(plan, source)
    from compiler.backends.gpu.opencl_runtime import OpenCLProgram

    return OpenCLProgram(plan, source)
