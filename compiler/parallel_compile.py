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
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr

from compiler import compile_timing
from compiler.backends.llvm_cpu.compile import build, compile_object, link
from compiler.errors import CompileError
from compiler.fork_pool import fork_map, fork_map_meanwhile
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


MACHINE_CODE = "machine-code"
"""The section of `ziggurat compile --timing` that compile_split times (wall seconds)."""


def _compile_part(part: ModuleOp) -> tuple[bool, Any, list[tuple[tuple[str, ...], float]]]:
    """(ok, object code or the error, seconds per step) of one kernel module, in a worker."""
    with compile_timing.collecting(compile_timing.CompileTimer(clock=time.process_time)) as timer:
        try:
            unroll = computes(part)
            # no xDSL verification: LLVM verifies the module it parses (compile_object)
            run_passes(make_context(), part, lowering("loops", "llvm-dialect"), verify=False)
            return True, compile_object(part, unroll), timer.steps()
        except Exception as e:  # reported by the parent as a compile error
            return False, f"{type(e).__name__}: {e}", timer.steps()


_COMPUTING = frozenset({"vector.fma", "vector.reduction", "vector.contract"})


def computes(part: ModuleOp) -> bool:
    """Whether a loops-level kernel is more than a stream through memory: it carries values
    across loop iterations (scf.for iter_args: register-blocked accumulators, reductions),
    multiply-adds or calls math functions (exp, erf, tanh: softmax, GELU). LLVM's loop unrolling
    speeds those up (BERT-base ran 5% slower without it); the others (copies, scale and shift,
    ReLU, residual adds) run as fast without it, and unrolling their constant-trip loops was
    most of their LLVM time."""
    for op in part.walk():
        if (
            op.name in _COMPUTING
            or op.name.startswith("math.")
            or (isinstance(op, scf.ForOp) and op.iter_args)
        ):
            return True
    return False


def _size(part: ModuleOp) -> int:
    """How much work a kernel module is to compile: its operations."""
    return sum(1 for _ in part.walk())


def _gather(
    results: Sequence[tuple[bool, Any, list[tuple[tuple[str, ...], float]]]],
) -> list[bytes]:
    timer = compile_timing.active()
    objects = []
    for ok, value, steps in results:
        if timer is not None:
            timer.add_worker(steps)
        if not ok:
            raise CompileError(f"compiling a kernel failed: {value}")
        objects.append(value)
    return objects


def compile_parts(parts: Sequence[ModuleOp], workers: int) -> list[bytes]:
    """Object code of each kernel module, compiled by `workers` forked processes."""
    return _gather(fork_map(_compile_part, parts, workers))


def compile_split(module: ModuleOp, ctx: Context, workers: int) -> tuple[Any, float]:
    """Compile a loops-level module: kernels by `workers` forked processes, the biggest first,
    while this process lowers and optimizes @main; then the JIT links them. Returns the program
    and the seconds spent waiting for the workers after @main was done."""
    with compile_timing.timed(MACHINE_CODE):
        return _compile_split(module, ctx, workers)


def _compile_split(module: ModuleOp, ctx: Context, workers: int) -> tuple[Any, float]:
    timer = compile_timing.active()
    with compile_timing.timed("split kernels"):
        parts = split_kernels(module)
        order = sorted(range(len(parts)), key=lambda i: -_size(parts[i]))
    if timer is not None:
        timer.counts["kernels"] = len(parts)
        timer.counts["kernel worker processes"] = min(workers, len(parts)) if workers > 1 else 0

    main_done = 0.0

    def lower_main() -> Any:
        nonlocal main_done
        with compile_timing.timed("@main (while the workers compile the kernels)"):
            # verified by LLVM when parsed (xDSL's verifier looks every symbol up: seconds)
            run_passes(ctx, module, lowering("loops", "llvm-dialect"), verify=False)
            built = build(module)
        main_done = time.perf_counter()
        return built

    results, built = fork_map_meanwhile(
        _compile_part, [parts[i] for i in order], workers, lower_main
    )
    objects: list[bytes] = [b""] * len(parts)
    for i, obj in zip(order, _gather(results), strict=True):
        objects[i] = obj
    waited = time.perf_counter() - main_done
    compile_timing.record("wait for the kernel workers", waited)
    with compile_timing.timed("link"):
        program = link(built, module, objects)
    return program, waited


def default_workers() -> int:
    """Processes for compiling kernels: the CPU's cores (ZIGGURAT_COMPILE_JOBS overrides)."""
    env = os.environ.get("ZIGGURAT_COMPILE_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    return max(
        1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
