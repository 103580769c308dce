"""LLVM-dialect module -> optimized code for the host CPU: translate.py, then jit.py.

`compile_module` JITs a module (linked with kernels compiled elsewhere by `compile_object`) into
a callable program; `compile_to_llvm_ir` and `compile_to_asm` show what it becomes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import llvmlite.binding as llvm
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from compiler.backends.llvm_cpu import jit
from compiler.backends.llvm_cpu.jit import LLVMCPUProgram
from compiler.backends.llvm_cpu.translate import exported_functions, translate

_program_ids = itertools.count()


def _build(
    module: ModuleOp, prefix: str
) -> tuple[llvm.ModuleRef, llvm.TargetMachine, dict[str, np.ndarray], dict[str, float]]:
    """Translate, parse and optimize: (optimized module, its target machine, the buffers bound
    to its external globals, seconds per step)."""
    t0 = time.perf_counter()
    tm = jit.target_machine()
    irmod, bound = translate(module, data_layout=str(tm.target_data), prefix=prefix)
    t1 = time.perf_counter()
    mod = jit.parse(str(irmod))
    t2 = time.perf_counter()
    jit.optimize(mod, tm)
    t3 = time.perf_counter()
    return mod, tm, bound, {"translate_s": t1 - t0, "parse_s": t2 - t1, "optimize_s": t3 - t2}


def compile_to_llvm_ir(module: ModuleOp) -> str:
    """Optimized LLVM IR text (large constants appear as external globals)."""
    mod, _, _, _ = _build(module, prefix="")
    return str(mod)


def compile_to_asm(module: ModuleOp) -> str:
    """Host assembly of the optimized module."""
    mod, tm, _, _ = _build(module, prefix="")
    return str(tm.emit_assembly(mod))


def compile_object(module: ModuleOp) -> bytes:
    """Optimized machine code of a self-contained LLVM-dialect module, as an object file: what a
    worker process returns when kernels are compiled in parallel (see compile_module's objects),
    and what the tuner's builder hands its runner."""
    mod, tm, bound, _ = _build(module, prefix="")
    if bound:
        raise ValueError(
            "compile_object: a module with bound constants must be compiled by compile_module"
        )
    return jit.emit_object(mod, tm)


def compile_module(module: ModuleOp, objects: Sequence[bytes] = ()) -> LLVMCPUProgram:
    """Translate, optimize (O3, host CPU) and JIT an LLVM-dialect module, linked with `objects`
    (kernels compiled by compile_object) that define the functions it only declares."""
    mod, tm, bound, timings = _build(module, prefix=f"__zg{next(_program_ids)}_")
    program = jit.load(
        mod,
        objects,
        signatures=exported_functions(module),
        symbols=bound,
        tm=tm,
        llvm_ir=str(mod),
    )
    program.timings = {**timings, **program.timings}
    return program
