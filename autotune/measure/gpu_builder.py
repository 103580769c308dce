"""The GPU builder: kernel IR + a candidate's schedule passes -> kernel C source and its launches.

Per candidate (in a forked pool, as LocalBuilder): the kernel becomes a private function that a
new `@main` with the same arguments calls (convert-linalg-to-gpu turns @main's calls into
launches), the candidate's passes run, then `convert-linalg-to-gpu{target=<preset>}`; the
artifact is the kernels' OpenCL C or CUDA C and @main read into launches (host_plan.build_plan,
every @main argument being one of the kernel's). The candidate's passes edit the kernel's
schedules from the same starting point as when its record is replayed (the CPU default where
no schedule is attached; a GPU candidate starts with `default-schedule{target=...}` to start
from the GPU default); kernels still without a schedule get the preset's GPU default. CUDA C
is also compiled by nvcc (to PTX, where nvcc is installed), so what would not compile on the
GPU machine is a compile_error here.

The artifact (UTF-8 JSON), read back by `read_artifact` in the runner process:

    {"format": 1, "api": "opencl" | "cuda", "preset": "<preset>", "source": "<kernel C>",
     "arguments": [[shape, dtype], ...],    # @main's = the kernel's (kernel_signature)
     "launches": [{"kernel": name, "grid": [x, y, z], "block": [x, y, z],
                   "args": [[kind, key, byte_offset], ...]}, ...],
                   # kind "argument" (key: @main argument index), "weight" (key: its name)
                   # or "arena" (key 0)
     "weights": {name: {"shape": [...], "dtype": "float32", "data": "<base64>"}},
     "arena_bytes": n}

xDSL and the compiler are imported inside the functions: the runner process imports this
module (for read_artifact) and this package, and must start without them.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from autotune.measure.builder import build_in_pool
from autotune.measure.interfaces import BuildInput, BuildResult, Signature
from autotune.measure.kernel import kernel_signature, parse_kernel

if TYPE_CHECKING:
    from compiler.backends.gpu.host_plan import BufferKind, HostPlan

ARTIFACT_FORMAT = 1
KERNEL_NAME = "candidate"
"""The kernel function's name in the built module (`kernel` is an OpenCL C keyword); its GPU
kernels are named after it (`candidate`, or `candidate_0`, `candidate_1`... for several nests)."""
_ARG_KIND: dict[BufferKind, str] = {"input": "argument", "weight": "weight", "arena": "arena"}
"""host_plan's BufferRef kinds -> the artifact's (every @main argument is an "input" there)."""


def gpu_build(kernel_ir: str, passes: list[str], preset: str, nvcc_timeout_s: float = 300) -> bytes:
    """The artifact (see the module docstring) of `kernel_ir` scheduled by `passes` for `preset`.
    CompileError (or another exception) when the schedule is illegal or the source does not
    compile."""
    # imported here: keeps the runner process free of xDSL (see the module docstring)
    from xdsl.dialects import func
    from xdsl.dialects.builtin import StringAttr
    from xdsl.ir import Block, Region

    from compiler.backends.gpu.compile import kernel_source
    from compiler.backends.gpu.cuda_check import check_cuda_source, nvcc_path
    from compiler.backends.gpu.host_plan import build_plan
    from compiler.pass_runner import run_passes
    from passes.schedule.gpu_target import gpu_target

    api = gpu_target(preset).api
    ctx, module, kernel = parse_kernel(kernel_ir)
    kernel.sym_name = StringAttr(KERNEL_NAME)
    kernel.sym_visibility = StringAttr("private")
    types = list(kernel.function_type.inputs.data)
    body = Block(arg_types=types)
    body.add_ops([func.CallOp(KERNEL_NAME, list(body.args), []), func.ReturnOp()])
    module.body.block.add_op(func.FuncOp("main", (types, []), Region(body)))
    run_passes(ctx, module, [*passes, f"convert-linalg-to-gpu{{target={preset}}}"])
    source = kernel_source(module, api)
    if api == "cuda" and nvcc_path() is not None:
        check_cuda_source(source, timeout_s=nvcc_timeout_s)
    plan = build_plan(module, num_inputs=len(types))
    return _artifact(api, preset, source, kernel_signature(kernel_ir), plan)


def _artifact(api: str, preset: str, source: str, arguments: Signature, plan: HostPlan) -> bytes:
    launches = [
        {
            "kernel": x.kernel,
            "grid": list(x.grid),
            "block": list(x.block),
            "args": [[_ARG_KIND[r.kind], r.key, r.byte_offset] for r in x.args],
        }
        for x in plan.launches
    ]
    weights = {
        name: {
            "shape": list(w.shape),
            "dtype": w.dtype.name,
            "data": base64.b64encode(np.ascontiguousarray(w).tobytes()).decode(),
        }
        for name, w in plan.weights.items()
    }
    doc = {
        "format": ARTIFACT_FORMAT,
        "api": api,
        "preset": preset,
        "source": source,
        "arguments": [[list(shape), dtype] for shape, dtype in arguments],
        "launches": launches,
        "weights": weights,
        "arena_bytes": plan.arena_bytes,
    }
    return json.dumps(doc).encode()


def read_artifact(artifact: bytes) -> tuple[dict[str, Any], HostPlan]:
    """(the artifact's JSON document, its launches as a HostPlan whose inputs are @main's
    arguments and which has no outputs: the runner reads every argument back)."""
    from compiler.backends.gpu.host_plan import BufferRef, BufferSpec, HostPlan, Launch

    doc = json.loads(artifact)
    if doc.get("format") != ARTIFACT_FORMAT:
        raise ValueError(f"not a GPU artifact of format {ARTIFACT_FORMAT}")
    kinds = {v: k for k, v in _ARG_KIND.items()}
    specs = tuple(
        BufferSpec(f"arg{i}", tuple(shape), np.dtype(dtype))
        for i, (shape, dtype) in enumerate(doc["arguments"])
    )
    launches = tuple(
        Launch(
            x["kernel"],
            tuple(x["grid"]),
            tuple(x["block"]),
            tuple(BufferRef(kinds[kind], key, offset) for kind, key, offset in x["args"]),
        )
        for x in doc["launches"]
    )
    weights = {
        name: np.frombuffer(base64.b64decode(w["data"]), w["dtype"]).reshape(w["shape"]).copy()
        for name, w in doc["weights"].items()
    }
    return doc, HostPlan(specs, (), weights, doc["arena_bytes"], launches)


def _make(preset: str, nvcc_timeout_s: float, job: BuildInput) -> bytes:
    return gpu_build(job.ir, job.passes, preset, nvcc_timeout_s)


class GpuBuilder:
    """Builds for the GPU schedule preset `preset` (passes/schedule/gpu_target.py) on this
    machine: in a forked pool of `workers` processes, each build within `timeout_s` (as
    LocalBuilder)."""

    def __init__(self, preset: str, workers: int = 2, timeout_s: float = 10.0) -> None:
        from passes.schedule.gpu_target import gpu_target

        self.api = gpu_target(preset).api  # ValueError naming the presets
        self.preset = preset
        self.workers = workers
        self.timeout_s = timeout_s

    def build(self, inputs: Sequence[BuildInput]) -> list[BuildResult]:
        make = functools.partial(_make, self.preset, self.timeout_s)
        return build_in_pool(make, inputs, self.workers, self.timeout_s)
