"""LLVM-dialect module -> optimized code for the host CPU: translate.py, then jit.py.

`compile_module` JITs a module (linked with kernels compiled elsewhere by `compile_object`) into
a callable program; `compile_to_llvm_ir` and `compile_to_asm` show what it becomes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from compiler.backends.llvm_cpu import jit
from compiler.backends.llvm_cpu.jit import LLVMCPUProgram
from compiler.backends.llvm_cpu.translate import exported_functions, translate
from compiler.compile_timing import timed
from compiler.pass_runner import gc_paused
from dialects.attributes import RELEASE_ARENAS_FUNCTION

_program_ids = itertools.count()

# the steps of `ziggurat compile --timing` (compiler/compile_timing.py) this module records
TRANSLATE_STEP = "translate to LLVM IR (llvmlite)"
PARSE_STEP = "print + parse LLVM IR"
OPTIMIZE_STEP = "LLVM optimize (O3)"
CODEGEN_STEP = "LLVM codegen (object file)"
JIT_STEP = "LLVM codegen + link (JIT)"


def _build(
    module: ModuleOp, prefix: str, unroll: bool = True
) -> tuple[llvm.ModuleRef, llvm.TargetMachine, dict[str, np.ndarray], dict[str, float]]:
    """Translate, parse and optimize: (optimized module, its target machine, the buffers bound
    to its external globals, seconds per step)."""
    with gc_paused():  # see there: translating builds many small objects
        t0 = time.perf_counter()
        with timed(TRANSLATE_STEP):
            tm = jit.target_machine()
            irmod, bound = translate(module, data_layout=str(tm.target_data), prefix=prefix)
        t1 = time.perf_counter()
        with timed(PARSE_STEP):
            mod = jit.parse(str(irmod))
        t2 = time.perf_counter()
        with timed(OPTIMIZE_STEP):
            jit.optimize(mod, tm, unroll)
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


def compile_object(module: ModuleOp, unroll: bool = True) -> bytes:
    """Optimized machine code of a self-contained LLVM-dialect module, as an object file: what a
    worker process returns when kernels are compiled in parallel (see compile_module's objects),
    and what the tuner's builder hands its runner."""
    mod, tm, bound, _ = _build(module, prefix="", unroll=unroll)
    if bound:
        raise ValueError(
            "compile_object: a module with bound constants must be compiled by compile_module"
        )
    with timed(CODEGEN_STEP):
        return jit.emit_object(mod, tm)


@dataclass
class Built:
    """A module translated, parsed and optimized, not yet loaded (see `build` and `link`)."""

    mod: llvm.ModuleRef
    tm: llvm.TargetMachine
    bound: dict[str, np.ndarray]
    timings: dict[str, float]


def build(module: ModuleOp) -> Built:
    """The first half of compile_module: translate, parse and optimize (O3, host CPU)."""
    mod, tm, bound, timings = _build(module, prefix=f"__zg{next(_program_ids)}_")
    return Built(mod, tm, bound, timings)


def link(built: Built, module: ModuleOp, objects: Sequence[bytes] = ()) -> LLVMCPUProgram:
    """The second half of compile_module: JIT the built module (`module` is the LLVM-dialect
    module it was built from), linked with `objects`."""
    with timed(JIT_STEP):
        signatures = exported_functions(module)
        program = jit.load(
            built.mod,
            objects,
            signatures=signatures,
            symbols=built.bound,
            tm=built.tm,
            llvm_ir=str(built.mod),
            release=RELEASE_ARENAS_FUNCTION if RELEASE_ARENAS_FUNCTION in signatures else None,
        )
    program.timings = {**built.timings, **program.timings}
    return program


def compile_module(module: ModuleOp, objects: Sequence[bytes] = ()) -> LLVMCPUProgram:
    """Translate, optimize (O3, host CPU) and JIT an LLVM-dialect module, linked with `objects`
    (kernels compiled by compile_object) that define the functions it only declares."""
    return link(build(module), module, objects)
