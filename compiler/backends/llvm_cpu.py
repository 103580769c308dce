"""LLVM-dialect module -> native code for the host CPU, through llvmlite (MCJIT).

The translation is xDSL's (`xdsl.backend.llvm`) with one wrapper, `_convert_op`, where the gaps
are patched: the ops of `dialects.llvm_extras`, fast-math flags on reductions and
`llvm.call_intrinsic` (ignored or rejected upstream), overloaded intrinsic name mangling, and
`llvm.mlir.addressof` of renamed globals. Large constant globals (model weights) never become
LLVM IR constants (printing and parsing tens of MB of IR text takes minutes): they are emitted
as external globals whose addresses are bound to numpy arrays kept alive by the program.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from xdsl.backend.llvm.convert import _declare_func  # pyright: ignore[reportPrivateUsage]
from xdsl.backend.llvm.convert_op import (  # pyright: ignore[reportPrivateUsage]
    _BINARY_INTRINSIC_MAP,
    _UNARY_INTRINSIC_MAP,
)
from xdsl.backend.llvm.convert_op import convert_op as xdsl_convert_op
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm as xllvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Operation, SSAValue

from dialects.llvm_extras import TRANSLATIONS

INLINE_CONSTANT_LIMIT = 4096  # bytes; larger constant globals are bound, not emitted
_program_ids = itertools.count()
_TYPE_SUFFIX = re.compile(r"^(v[0-9]+)?[if][0-9]+$")


# ----------------------------------------------------------------------------- translation


def _mangled(name: str, ret: ir.Type, args: list[ir.Value]) -> str:
    """Append LLVM's overload suffix (`.f32`, `.v16f32`) when the name has none."""
    if _TYPE_SUFFIX.match(name.rsplit(".", 1)[-1]):
        return name
    key = args[-1].type if name.startswith("llvm.vector.reduce.") else ret
    if isinstance(key, ir.VectorType):
        return f"{name}.v{key.count}{key.element.intrinsic_name}"
    if isinstance(key, ir.VoidType):
        return name
    return f"{name}.{key.intrinsic_name}"


def _flags(op: Operation) -> list[str]:
    fm = op.properties.get("fastmathFlags")
    if not isinstance(fm, xllvm.FastMathAttr):
        return []
    return sorted(f.value for f in fm.data)


def _convert_op(
    op: Operation,
    builder: ir.IRBuilder,
    vals: dict[SSAValue, ir.Value],
    blocks: dict[Block, ir.Block],
    globals_: dict[str, ir.GlobalValue],
) -> None:
    """xDSL's translation of one op, with ziggurat's patches in front of it."""
    if isinstance(op, xllvm.AllocaOp):
        # llvmlite types an alloca as `i8*`; every other !llvm.ptr is opaque, so loads and
        # stores of other types through it would be rejected: cast it to an opaque pointer
        slot = builder.alloca(convert_type(op.elem_type), size=vals[op.size])
        if op.alignment:
            slot.align = op.alignment.value.data
        slot.type = ir.PointerType()  # (a bitcast would be dropped: pointer types compare equal)
        vals[op.results[0]] = slot
        return
    handler = TRANSLATIONS.get(type(op))
    if handler is not None:
        handler(op, builder, vals)
        return
    if isinstance(op, xllvm.AddressOfOp):
        vals[op.result] = globals_[op.global_name.root_reference.data]
        return
    intrinsic = _UNARY_INTRINSIC_MAP.get(type(op)) or _BINARY_INTRINSIC_MAP.get(type(op))
    if intrinsic is not None:
        # upstream declares e.g. `llvm.exp` unmangled, so f32 and <16 x float> uses collide
        args = [vals[a] for a in op.operands]
        fnty = ir.FunctionType(args[0].type, [a.type for a in args])
        fn = _intrinsic(builder.module, _mangled(intrinsic, args[0].type, args), fnty)
        vals[op.results[0]] = builder.call(fn, args, fastmath=_flags(op))
        return
    if isinstance(op, xllvm.VectorReduceFAddOp | xllvm.VectorReduceFMulOp):
        start, vec = vals[op.operands[0]], vals[op.operands[1]]
        kind = "fadd" if isinstance(op, xllvm.VectorReduceFAddOp) else "fmul"
        fnty = ir.FunctionType(start.type, [start.type, vec.type])
        fn = _intrinsic(
            builder.module, _mangled(f"llvm.vector.reduce.{kind}", start.type, [vec]), fnty
        )
        vals[op.results[0]] = builder.call(fn, [start, vec], fastmath=_flags(op))
        return
    if isinstance(op, xllvm.CallIntrinsicOp):
        args = [vals[a] for a in op.args]
        ret = convert_type(op.ress.type) if op.ress is not None else ir.VoidType()
        name = _mangled(op.intrin.data, ret, args)
        fn = _intrinsic(builder.module, name, ir.FunctionType(ret, [a.type for a in args]))
        res = builder.call(fn, args, fastmath=_flags(op))
        if op.ress is not None:
            vals[op.ress] = res
        return
    xdsl_convert_op(op, builder, vals, blocks)


def _intrinsic(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing  # type: ignore[return-value]
    return ir.Function(module, fnty, name=name)


_NP_DTYPES: dict[type, Callable[[Any], np.dtype]] = {
    Float32Type: lambda t: np.dtype(np.float32),
    Float64Type: lambda t: np.dtype(np.float64),
    IntegerType: lambda t: (
        np.dtype(f"int{t.width.data}") if t.width.data >= 8 else np.dtype(np.bool_)
    ),
}


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The raw little-endian payload of a dense attribute as a flat numpy array (no copy)."""
    elem = attr.get_element_type()
    dtype = _NP_DTYPES[type(elem)](elem)
    return np.frombuffer(attr.data.data, dtype=dtype)


def _convert_global(
    op: xllvm.GlobalOp, module: ir.Module, prefix: str, bound: dict[str, np.ndarray]
) -> ir.GlobalVariable:
    gtype = convert_type(op.global_type)
    value = op.value
    name = op.sym_name.data
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = dense_to_numpy(value)
        if data.nbytes >= INLINE_CONSTANT_LIMIT:
            # external global: the JIT resolves it to a numpy buffer we keep alive
            symbol = f"{prefix}{name}"
            gvar = ir.GlobalVariable(module, gtype, name=symbol)
            gvar.linkage = "external"
            gvar.global_constant = op.constant is not None
            gvar.align = 64
            buf = np.empty(data.nbytes + 64, dtype=np.uint8)
            shift = (-buf.ctypes.data) % 64
            arr = buf[shift : shift + data.nbytes].view(data.dtype)
            arr[...] = data
            bound[symbol] = arr
            return gvar
    gvar = ir.GlobalVariable(module, gtype, name=name)
    gvar.linkage = op.linkage.linkage.data
    if op.constant is not None:
        gvar.global_constant = True
    if op.alignment is not None:
        gvar.align = op.alignment.value.data
    if isinstance(value, DenseIntOrFPElementsAttr):
        gvar.initializer = ir.Constant(gtype, dense_to_numpy(value).tolist())
    elif isinstance(value, StringAttr):
        raw = value.data.encode()
        gvar.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(raw)), bytearray(raw))
    elif value is not None:
        from xdsl.backend.llvm.convert_op import create_constant

        gvar.initializer = create_constant(op.global_type, value)
    elif op.linkage.linkage.data != "external":
        gvar.initializer = ir.Constant(gtype, None)
    return gvar


def _convert_func(op: xllvm.FuncOp, module: ir.Module, globals_: dict[str, ir.GlobalValue]) -> None:
    fn = module.get_global(op.sym_name.data)
    if op.linkage.linkage.data in ("internal", "private") and op.body.blocks:
        fn.linkage = "internal"
    if not op.body.blocks:
        return
    blocks: dict[Block, ir.Block] = {}
    vals: dict[SSAValue, ir.Value] = {}
    for i, block in enumerate(op.body.blocks):
        blocks[block] = fn.append_basic_block(name=block.name_hint or "")
        if i == 0:
            vals.update(zip(block.args, fn.args))
    for i, block in enumerate(op.body.blocks):
        if i and block.args:
            b = ir.IRBuilder(blocks[block])
            for arg in block.args:
                vals[arg] = b.phi(convert_type(arg.type))
    for block in op.body.blocks:
        b = ir.IRBuilder(blocks[block])
        if blocks[block].instructions:
            b.position_after(blocks[block].instructions[-1])
        for inner in block.ops:
            _convert_op(inner, b, vals, blocks, globals_)


def translate(
    module: ModuleOp, *, triple: str = "", data_layout: str = "", prefix: str = ""
) -> tuple[ir.Module, dict[str, np.ndarray]]:
    """LLVM-dialect module -> llvmlite IR module + the numpy buffers bound to external globals."""
    out = ir.Module()
    out.triple = triple or llvm.get_process_triple()
    if data_layout:
        out.data_layout = data_layout
    bound: dict[str, np.ndarray] = {}
    globals_: dict[str, ir.GlobalValue] = {}
    funcs: list[xllvm.FuncOp] = []
    for op in module.ops:
        if isinstance(op, xllvm.GlobalOp):
            globals_[op.sym_name.data] = _convert_global(op, out, prefix, bound)
        elif isinstance(op, xllvm.FuncOp):
            funcs.append(op)
        else:
            raise NotImplementedError(f"llvm_cpu: unexpected top-level op {op.name}")
    for f in funcs:
        _declare_func(f, out)
        globals_[f.sym_name.data] = out.get_global(f.sym_name.data)
    for f in funcs:
        _convert_func(f, out, globals_)
    return out, bound


# ----------------------------------------------------------------------------- compilation

_initialized = False


def _target_machine() -> llvm.TargetMachine:
    global _initialized
    if not _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized = True
    target = llvm.Target.from_triple(llvm.get_process_triple())
    # host CPU name + features: without them <16 x float> FMAs become scalar libcalls
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        codemodel="jitdefault",
        jit=True,
    )


def _optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def _build(
    module: ModuleOp, prefix: str
) -> tuple[llvm.ModuleRef, llvm.TargetMachine, dict[str, np.ndarray], dict[str, float]]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    tm = _target_machine()
    irmod, bound = translate(module, data_layout=str(tm.target_data), prefix=prefix)
    t1 = time.perf_counter()
    mod = llvm.parse_assembly(str(irmod))
    mod.verify()
    t2 = time.perf_counter()
    _optimize(mod, tm)
    t3 = time.perf_counter()
    timings.update(translate_s=t1 - t0, parse_s=t2 - t1, optimize_s=t3 - t2)
    return mod, tm, bound, timings


def compile_to_llvm_ir(module: ModuleOp) -> str:
    """Optimized LLVM IR text (large constants appear as external globals)."""
    mod, _, _, _ = _build(module, prefix="")
    return str(mod)


def compile_to_asm(module: ModuleOp) -> str:
    """Host assembly of the optimized module."""
    mod, tm, _, _ = _build(module, prefix="")
    return tm.emit_assembly(mod)


_CTYPES: dict[str, Any] = {
    "ptr": ctypes.c_void_p,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "i8": ctypes.c_int8,
    "i1": ctypes.c_bool,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def _ctype(t: Any) -> Any:
    if isinstance(t, xllvm.LLVMPointerType):
        return ctypes.c_void_p
    if isinstance(t, xllvm.LLVMVoidType):
        return None
    if isinstance(t, IntegerType):
        return _CTYPES[f"i{t.width.data}"]
    if isinstance(t, Float32Type):
        return ctypes.c_float
    if isinstance(t, Float64Type):
        return ctypes.c_double
    raise NotImplementedError(f"cannot call a function taking/returning {t}")


def _as_pointer(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError("compiled functions need C-contiguous arrays (see compiler.runtime)")
        return x.ctypes.data
    return x


@dataclass
class LLVMCPUProgram:
    """A JIT-compiled module: callable functions, its optimized IR and assembly, timings."""

    engine: llvm.ExecutionEngine
    target_machine: llvm.TargetMachine
    llvm_ir: str
    signatures: dict[str, tuple[list[Any], Any]]
    bound_constants: dict[str, np.ndarray] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    parallel: bool = False  # calls the thread-pool runtime
    _asm: str | None = None

    def function(self, name: str) -> Callable[..., Any]:
        """A Python callable for `name`: pass numpy arrays (C-contiguous), ints or floats."""
        if name not in self.signatures:
            raise KeyError(f"no function {name!r}; have {sorted(self.signatures)}")
        args, ret = self.signatures[name]
        addr = self.engine.get_function_address(name)
        cfn = ctypes.CFUNCTYPE(ret, *args)(addr)

        def call(*xs: Any) -> Any:
            if len(xs) != len(args):
                raise TypeError(f"{name} takes {len(args)} arguments, got {len(xs)}")
            return cfn(*(_as_pointer(x) for x in xs))

        call.__name__ = name
        call.address = addr  # type: ignore[attr-defined]
        call._keepalive = (self, cfn)  # type: ignore[attr-defined]
        return call

    @property
    def asm(self) -> str:
        if self._asm is None:
            self._asm = self.target_machine.emit_assembly(llvm.parse_assembly(self.llvm_ir))
        return self._asm

    @property
    def compile_time_s(self) -> float:
        return sum(self.timings.values())


def compile_object(module: ModuleOp) -> bytes:
    """Optimized machine code of a self-contained LLVM-dialect module, as an object file: what a
    worker process returns when kernels are compiled in parallel (see compile_module's objects)."""
    mod, tm, bound, _ = _build(module, prefix="")
    if bound:
        raise ValueError("compile_object: a module with bound constants must be compiled by compile_module")
    return tm.emit_object(mod)


def uses_parallel_runtime(*code: str | bytes) -> bool:
    """Whether IR text or object code calls the thread-pool runtime (compiler/parallel_runtime.py)."""
    return any(("zrt_parallel_for" if isinstance(c, str) else b"zrt_parallel_for") in c for c in code)


def compile_module(module: ModuleOp, objects: Sequence[bytes] = ()) -> LLVMCPUProgram:
    """Translate, optimize (O3, host CPU) and JIT an LLVM-dialect module, linked with `objects`
    (kernels compiled by compile_object) that define the functions it only declares."""
    prefix = f"__zg{next(_program_ids)}_"
    mod, tm, bound, timings = _build(module, prefix)
    t0 = time.perf_counter()
    parallel = uses_parallel_runtime(str(mod), *objects)
    if parallel:  # before finalizing: an unresolved runtime symbol would be a crash at the call
        from compiler import parallel_runtime

        parallel_runtime.load()
    for symbol, array in bound.items():
        llvm.add_symbol(symbol, array.ctypes.data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    timings["jit_s"] = time.perf_counter() - t0
    signatures: dict[str, tuple[list[Any], Any]] = {}
    for op in module.ops:
        if (
            isinstance(op, xllvm.FuncOp)
            and op.body.blocks
            and op.linkage.linkage.data not in ("internal", "private")
        ):
            ftype = op.function_type
            signatures[op.sym_name.data] = (
                [_ctype(t) for t in ftype.inputs.data],
                _ctype(ftype.output),
            )
    return LLVMCPUProgram(
        engine=engine,
        target_machine=tm,
        llvm_ir=str(mod),
        signatures=signatures,
        bound_constants=bound,
        timings=timings,
        parallel=parallel,
    )
