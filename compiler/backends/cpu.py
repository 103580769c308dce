"""The "cpu" backend: loops level -> LLVM -> machine code for this CPU, through llvmlite.

Its artifact is the loaded program (compiler/backends/llvm_cpu/jit.py LLVMCPUProgram): the
workers of compiler/parallel_compile.py compile and the JIT links in one go, and the program
keeps what a package needs (object files, @main's IR, the bound weights). Packages: the
"llvm-cpu" section of compiler/package/llvm_cpu.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.backends.base import Backend, CompileOptions, Program
from compiler.backends.llvm_cpu import jit
from compiler.package import llvm_cpu
from compiler.package.errors import PackageError

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp


class CpuBackend(Backend[jit.LLVMCPUProgram]):
    name = "cpu"
    package_backend = llvm_cpu.BACKEND
    cached = True
    threaded = True

    def lower(
        self, module: ModuleOp, ctx: Context, timings: dict[str, float], options: CompileOptions
    ) -> ModuleOp:
        from compiler.lowering import lower

        o = options
        return lower(
            module,
            "loops",
            ctx,
            timings,
            optimize=o.optimize,
            schedules=o.schedules,
            threads=o.threads,
            layout=o.layout,
        )

    def emit(
        self, module: ModuleOp, ctx: Context, num_inputs: int, options: CompileOptions
    ) -> jit.LLVMCPUProgram:
        from compiler.parallel_compile import compile_split, default_workers

        program, _ = compile_split(module, ctx, options.jobs or default_workers())
        return program

    def load(self, artifact: jit.LLVMCPUProgram, threads: int) -> Program:
        return artifact  # loaded by emit (the model sets the thread count when it runs)

    def package_target(self, artifact: jit.LLVMCPUProgram) -> dict[str, Any]:
        return llvm_cpu.target()

    def pack(
        self, path: str, artifact: jit.LLVMCPUProgram
    ) -> tuple[dict[str, Any], dict[str, bytes]]:
        if not isinstance(artifact, jit.LLVMCPUProgram):
            raise PackageError(
                path,
                "holds no compiled code that a package can hold (compile it with compile_model)",
            )
        return llvm_cpu.pack(artifact)

    def unpack(
        self, path: str, manifest: dict[str, Any], parts: dict[str, memoryview], threads: int
    ) -> Program:
        return llvm_cpu.unpack(path, manifest, parts, threads)
