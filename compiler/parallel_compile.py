"""Compile a loops-level module's kernels to machine code in parallel worker processes.

Most of the compile time of a model goes into lowering its kernels to the llvm dialect and into
LLVM's O3 pipeline, and kernels are independent: each outlined `@kernel_<n>` becomes a module of
its own, lowered and compiled to an object file by a forked worker, while `@main` (with the
weights) is compiled in this process and linked with the objects by the JIT.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Sequence
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr

from compiler.backends.llvm_cpu.compile import compile_module as compile_llvm
from compiler.backends.llvm_cpu.compile import compile_object
from compiler.errors import CompileError
from compiler.fork_pool import fork_map
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import lowering

_counter = itertools.count()


def split_kernels(module: ModuleOp) -> list[ModuleOp]:
    """Move every private kernel function with a body out of `module` into a module of its own.

    Kernels get names unique to this process (`zk<n>_<name>`) so that JIT engines of several
    compiled models never resolve a call to another model's kernel; `module` keeps a declaration.
    """
    kernels = [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and op.body.blocks
        and op.sym_visibility is not None
        and op.sym_visibility.data == "private"
    ]
    if not kernels:
        return []
    tag = f"zk{os.getpid()}x{next(_counter)}_"
    renamed = {k.sym_name.data: tag + k.sym_name.data for k in kernels}
    for call in (o for o in module.walk() if isinstance(o, func.CallOp)):
        name = call.callee.root_reference.data
        if name in renamed:
            call.callee = SymbolRefAttr(renamed[name])
    parts = []
    for k in kernels:
        k.detach()
        k.sym_name = StringAttr(renamed[k.sym_name.data])
        decl = func.FuncOp.external(
            k.sym_name.data, list(k.function_type.inputs), list(k.function_type.outputs)
        )
        module.body.block.add_op(decl)
        k.sym_visibility = None  # public in its own module, so the JIT can link the call
        parts.append(ModuleOp([k]))
    return parts


def _compile_part(part: ModuleOp) -> tuple[bool, Any]:
    try:
        run_passes(make_context(), part, lowering("loops", "llvm-dialect"))
        return True, compile_object(part)
    except Exception as e:  # reported by the parent as a compile error
        return False, f"{type(e).__name__}: {e}"


def compile_parts(parts: Sequence[ModuleOp], workers: int) -> list[bytes]:
    """Object code of each kernel module, compiled by `workers` forked processes."""
    objects = []
    for ok, value in fork_map(_compile_part, parts, workers):
        if not ok:
            raise CompileError(f"compiling a kernel failed: {value}")
        objects.append(value)
    return objects


def compile_split(module: ModuleOp, ctx: Context, workers: int) -> tuple[Any, float]:
    """Compile a loops-level module: kernels in parallel, @main here. Returns the program and the
    seconds spent waiting for the workers."""
    parts = split_kernels(module)
    t0 = time.perf_counter()
    objects = compile_parts(parts, workers)
    waited = time.perf_counter() - t0
    run_passes(ctx, module, lowering("loops", "llvm-dialect"))
    return compile_llvm(module, objects), waited


def default_workers() -> int:
    """Processes for compiling kernels: the CPU's cores (ZIGGURAT_COMPILE_JOBS overrides)."""
    env = os.environ.get("ZIGGURAT_COMPILE_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    return max(
        1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
