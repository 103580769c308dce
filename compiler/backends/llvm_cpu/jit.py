"""LLVM IR and object code -> callable native code on this machine (llvmlite's MCJIT).

The one place for: the host target machine, the O3 pipeline and object emission, loading IR and
object files into an execution engine (with the thread-pool runtime, compiler/parallel_runtime.py,
loaded first when the code calls it), and calling a loaded function with numpy arrays. Also the
table between LLVM's scalar type names and ctypes (the one between element type names and numpy
dtypes is dialects/element_types.py's, re-exported here lazily).

Imports no xDSL (llvmlite, numpy, ctypes): the tuner's runner process loads and times object
code through this module (autotune/measure/runner.py) and starts quickly. Translating the llvm
dialect is compiler/backends/llvm_cpu/translate.py's job; compile.py joins the two.
"""

from __future__ import annotations

import ctypes
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from compiler import parallel_runtime

# ----------------------------------------------------------------------------- types

FunctionType = tuple[tuple[str, ...], str | None]
"""A function's argument type names and result type name (None: void), e.g. (("ptr", "i64"),
"f32"); the names are CTYPES's keys."""

CTYPES: dict[str, Any] = {
    "ptr": ctypes.c_void_p,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "i16": ctypes.c_int16,
    "i8": ctypes.c_int8,
    "i1": ctypes.c_bool,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}
"""LLVM scalar type name -> the ctypes type a function argument or result of that type has."""


def c_type(name: str | None) -> Any:
    """The ctypes type of an argument or result of LLVM type `name` (None: void)."""
    if name is None:
        return None
    if name not in CTYPES:
        raise NotImplementedError(f"cannot call a function taking/returning {name}")
    return CTYPES[name]


# ----------------------------------------------------------------------------- host target

_initialized = False


def _initialize() -> None:
    global _initialized
    if not _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized = True


def host_target() -> dict[str, str]:
    """This machine's LLVM CPU name and feature string: what code is compiled for (and the
    `target` of the tuner's records)."""
    return {"cpu": llvm.get_host_cpu_name(), "features": llvm.get_host_cpu_features().flatten()}


def target_machine() -> llvm.TargetMachine:
    """A new target machine for the host CPU (O3, JIT code model). An engine owns, and frees,
    the target machine it is created with: give each engine a machine of its own."""
    _initialize()
    host = host_target()
    # host CPU name + features: without them <16 x float> FMAs become scalar libcalls
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=host["cpu"], features=host["features"], opt=3, codemodel="jitdefault", jit=True
    )


def parse(ir_text: str) -> llvm.ModuleRef:
    """LLVM IR text -> a verified module."""
    _initialize()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    return mod


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, unroll: bool = True) -> None:
    """LLVM's O3 pipeline for `tm`, loop and SLP vectorization on, in place.

    `unroll=False` turns LLVM's loop unrolling off: streaming loops (elementwise kernels,
    copies) run as fast without it, and unrolling their constant-trip loops is most of their
    optimization and code generation time (a 8 KB kernel grew to 114 KB of IR)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = unroll
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def emit_object(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> bytes:
    """The module as a relocatable object file (what `load` links and the tuner's runner runs)."""
    return bytes(tm.emit_object(mod))


# ----------------------------------------------------------------------------- loading

PARALLEL_SYMBOL = "zrt_parallel_for"
"""What code that runs parallel loops on the thread-pool runtime calls."""


def uses_parallel_runtime(*code: str | bytes) -> bool:
    """Whether IR text or object code calls the thread-pool runtime (compiler/parallel_runtime.py)."""
    text, raw = PARALLEL_SYMBOL, PARALLEL_SYMBOL.encode()
    return any(text in c if isinstance(c, str) else raw in c for c in code)


def as_argument(x: Any) -> Any:
    """A numpy array as the pointer to its data (it must be C-contiguous); anything else as is."""
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError("compiled functions need C-contiguous arrays (see compiler.runtime)")
        return x.ctypes.data
    return x


@dataclass
class LLVMCPUProgram:
    """Loaded native code: callable functions, its optimized IR and assembly, timings.

    `signatures` names the functions that may be called (their argument and result types);
    `bound_constants` are the buffers external globals resolve to, kept alive with the program.
    """

    engine: llvm.ExecutionEngine
    target_machine: llvm.TargetMachine
    llvm_ir: str
    signatures: dict[str, FunctionType]
    bound_constants: dict[str, np.ndarray] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    parallel: bool = False  # calls the thread-pool runtime
    objects: list[bytes] = field(default_factory=list)
    """The object files linked in (the kernels): with `llvm_ir`, all the code, so that the
    program can be saved as a package (compiler/package/) without compiling anything again."""
    release: str | None = None
    """A function of the code to call before unloading it (what @main keeps between calls:
    its arena, see convert-memref-to-llvm): on `close`, or when the program is collected."""
    _asm: str | None = None
    _release: Any = None

    def __post_init__(self) -> None:
        if self.release is not None:
            release = self.c_function(self.release)
            self._release = weakref.finalize(self, _free_arenas, release, self.engine)
            self._release.atexit = False

    def c_function(self, name: str) -> Any:
        """The raw ctypes function `name` (arguments: pointers as ints, ints, floats): no
        conversion per call, for timing loops. LookupError if the code does not define it."""
        args, ret = self.signatures[name]
        return ctypes.CFUNCTYPE(c_type(ret), *(c_type(a) for a in args))(self.address(name))

    def address(self, name: str) -> int:
        """Where function `name` was loaded. LookupError if it is not callable or not defined."""
        if name not in self.signatures:
            raise LookupError(f"no function `{name}`; have {sorted(self.signatures)}")
        addr = self.engine.get_function_address(name)
        if not addr:
            raise LookupError(f"the loaded code defines no function `{name}`")
        return int(addr)

    def function(self, name: str) -> Callable[..., Any]:
        """A Python callable for `name`: pass numpy arrays (C-contiguous), ints or floats."""
        if name not in self.signatures:
            raise KeyError(f"no function {name!r}; have {sorted(self.signatures)}")
        cfn = self.c_function(name)
        arity = len(self.signatures[name][0])

        def call(*xs: Any) -> Any:
            if len(xs) != arity:
                raise TypeError(f"{name} takes {arity} arguments, got {len(xs)}")
            return cfn(*(as_argument(x) for x in xs))

        call.__name__ = name
        call.address = self.address(name)  # type: ignore[attr-defined]
        call._keepalive = (self, cfn)  # type: ignore[attr-defined]
        return call

    def global_view(self, name: str, dtype: Any, count: int) -> np.ndarray:
        """A writable numpy view of the loaded global `name` (`count` elements of `dtype`), shared
        with the code: what it writes there shows, what is written here it reads."""
        for symbol, array in self.bound_constants.items():  # large ones: bound numpy buffers
            if symbol.endswith("_" + name) and array.size * array.itemsize >= count:
                return array.view(dtype)[:count]
        addr = self.engine.get_global_value_address(name)
        if not addr:
            raise LookupError(f"the loaded code defines no global `{name}`")
        nbytes = np.dtype(dtype).itemsize * count
        return np.frombuffer((ctypes.c_char * nbytes).from_address(addr), dtype=dtype)

    @property
    def asm(self) -> str:
        if self._asm is None:
            self._asm = self.target_machine.emit_assembly(llvm.parse_assembly(self.llvm_ir))
        return self._asm

    @property
    def compile_time_s(self) -> float:
        return sum(self.timings.values())

    def close(self) -> None:
        """Free the engine (and its target machine) now rather than when collected."""
        if self._release is not None:
            self._release()
        self.engine.close()


def _free_arenas(release: Any, engine: llvm.ExecutionEngine) -> None:
    """Call the code's arena release (`engine`, passed along, keeps the code loaded until then)."""
    release()


def load(
    module: llvm.ModuleRef | None = None,
    objects: Sequence[bytes] = (),
    *,
    signatures: Mapping[str, FunctionType] | None = None,
    symbols: Mapping[str, np.ndarray] | None = None,
    tm: llvm.TargetMachine | None = None,
    llvm_ir: str | None = None,
    threads: int | None = None,
    release: str | None = None,
) -> LLVMCPUProgram:
    """JIT `module` (none: an empty one) linked with the object files `objects`, which define
    what it only declares.

    `signatures`: the functions callable through the program. `symbols`: external globals bound
    to numpy buffers (large constants, see translate.py). `tm`: the target machine the module
    was optimized for (a new host one by default; the engine takes it over). `llvm_ir`: the
    module's text if the caller has it already. Code that calls the thread-pool runtime gets it
    loaded first (an unresolved runtime symbol would be a crash at the call), running on
    `threads` threads if given. `release`: the function to call before the code is unloaded
    (LLVMCPUProgram.release).
    """
    t0 = time.perf_counter()
    tm = tm or target_machine()
    if module is None:
        module = parse(
            f'target triple = "{llvm.get_process_triple()}"\ntarget datalayout = "{tm.target_data}"'
        )
    text = str(module) if llvm_ir is None else llvm_ir
    parallel = uses_parallel_runtime(text, *objects)
    if parallel:
        parallel_runtime.load()
        if threads is not None:
            parallel_runtime.set_num_threads(threads)
    bound = dict(symbols or {})
    for symbol, array in bound.items():
        llvm.add_symbol(symbol, array.ctypes.data)
    engine = llvm.create_mcjit_compiler(module, tm)
    try:
        for obj in objects:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    except BaseException:
        engine.close()
        raise
    return LLVMCPUProgram(
        engine=engine,
        target_machine=tm,
        llvm_ir=text,
        signatures=dict(signatures or {}),
        bound_constants=bound,
        timings={"jit_s": time.perf_counter() - t0},
        parallel=parallel,
        objects=list(objects),
        release=release,
    )
