"""The llvm dialect (xDSL) -> llvmlite IR.

The translation is xDSL's (`xdsl.backend.llvm`) with one wrapper, `_convert_op`, where the gaps
are patched: the ops of `dialects.llvm_extras`, fast-math flags on reductions and
`llvm.call_intrinsic` (ignored or rejected upstream), overloaded intrinsic name mangling, and
`llvm.mlir.addressof` of renamed globals. Large constant globals (model weights) never become
LLVM IR constants (printing and parsing tens of MB of IR text takes minutes): they are emitted
as external globals whose addresses are bound to numpy arrays kept alive by the program.

Also what the jit needs to know of the xDSL module: the functions it exports and their types
(`exported_functions`). Element types <-> numpy dtypes and dense attributes -> numpy arrays are
dialects/element_types.py's and dialects/dense.py's.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from xdsl.backend.llvm.convert import _declare_func  # pyright: ignore[reportPrivateUsage]
from xdsl.backend.llvm.convert_op import (  # pyright: ignore[reportPrivateUsage]
    _BINARY_INTRINSIC_MAP,
    _UNARY_INTRINSIC_MAP,
    create_constant,
)
from xdsl.backend.llvm.convert_op import convert_op as xdsl_convert_op
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm as xllvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from compiler.backends.llvm_cpu import jit
from compiler.backends.llvm_cpu.shared_constants import shared_constant
from compiler.runtime import aligned_copy
from dialects.dense import dense_to_numpy, element_type_name
from dialects.llvm_extras import TRANSLATIONS

INLINE_CONSTANT_LIMIT = 4096  # bytes; larger constant globals are bound, not emitted
_TYPE_SUFFIX = re.compile(r"^(v[0-9]+)?[if][0-9]+$")
_NOT_OVERLOADED = frozenset({"llvm.readcyclecounter"})


def _mangled(name: str, ret: ir.Type, args: list[ir.Value]) -> str:
    """Append LLVM's overload suffix (`.f32`, `.v16f32`) when the name has none."""
    if name in _NOT_OVERLOADED or _TYPE_SUFFIX.match(name.rsplit(".", 1)[-1]):
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
        return existing
    return ir.Function(module, fnty, name=name)


def scalar_type_name(t: Attribute) -> str:
    """A builtin or llvm-dialect scalar type as the jit's tables name it (`ptr`, `f32`, `i<width>`
    whatever the signedness): the key of dialects.element_types.ELEMENT_DTYPES and jit.CTYPES."""
    if isinstance(t, xllvm.LLVMPointerType):
        return "ptr"
    try:
        return element_type_name(t)
    except ValueError:
        raise NotImplementedError(f"no scalar type name for {t}") from None


def _global_data(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The elements of a global's dense initializer, flat (no copy unless a splat or i1)."""
    return dense_to_numpy(attr).reshape(-1)


def _convert_global(
    op: xllvm.GlobalOp, module: ir.Module, prefix: str, bound: dict[str, np.ndarray]
) -> ir.GlobalVariable:
    gtype = convert_type(op.global_type)
    value = op.value
    name = op.sym_name.data
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = _global_data(value)
        if data.nbytes >= INLINE_CONSTANT_LIMIT:
            # external global: the JIT resolves it to a numpy buffer we keep alive
            symbol = f"{prefix}{name}"
            gvar = ir.GlobalVariable(module, gtype, name=symbol)
            gvar.linkage = "external"
            gvar.global_constant = op.constant is not None
            gvar.align = 64
            # a constant is shared with every other program of the process holding the same
            # bytes (the other sizes of a symbolic model); code may write a variable
            constant = op.constant is not None
            bound[symbol] = shared_constant(data) if constant else aligned_copy(data, align=64)
            gvar.type = ir.PointerType()  # opaque, as for allocas (see _convert_op)
            return gvar
    raw_data: bytes | None = None
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = _global_data(value)
        if data.dtype != np.bool_:  # i1 elements are not one bit each in memory
            # the bytes, as `c"..."`: llvmlite formats a float element by element, and slowly
            raw_data = data.tobytes()
            gtype = ir.ArrayType(ir.IntType(8), len(raw_data))
    gvar = ir.GlobalVariable(module, gtype, name=name)
    gvar.linkage = op.linkage.linkage.data
    if op.constant is not None:
        gvar.global_constant = True
    if op.alignment is not None:
        gvar.align = op.alignment.value.data
    if raw_data is not None:
        gvar.initializer = ir.Constant(gtype, bytearray(raw_data))
        gvar.align = max(gvar.align or 0, 64)  # an i8 array's own alignment is 1
    elif isinstance(value, DenseIntOrFPElementsAttr):
        gvar.initializer = ir.Constant(gtype, _global_data(value).tolist())
    elif isinstance(value, StringAttr):
        raw = value.data.encode()
        gvar.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(raw)), bytearray(raw))
    elif value is not None:
        gvar.initializer = create_constant(op.global_type, value)
    elif op.linkage.linkage.data != "external":
        gvar.initializer = ir.Constant(gtype, None)
    if gvar.linkage == "external" and gvar.initializer is not None:
        gvar.linkage = ""  # a definition: LLVM's text spells external linkage by omitting it
    # !llvm.ptr is opaque: typed `[N x T]*`, a load or store of T at offset 0 (no GEP) would be
    # rejected by llvmlite's builder, as for allocas (see _convert_op)
    gvar.type = ir.PointerType()
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


def _call_type(t: Attribute) -> str:
    try:
        return scalar_type_name(t)
    except NotImplementedError:
        raise NotImplementedError(f"cannot call a function taking/returning {t}") from None


def exported_functions(module: ModuleOp) -> dict[str, jit.FunctionType]:
    """The functions with a body that the module exports (not internal or private), with their
    argument and result types as the jit names them."""
    out: dict[str, jit.FunctionType] = {}
    for op in module.ops:
        if (
            isinstance(op, xllvm.FuncOp)
            and op.body.blocks
            and op.linkage.linkage.data not in ("internal", "private")
        ):
            ftype = op.function_type
            void = isinstance(ftype.output, xllvm.LLVMVoidType)
            out[op.sym_name.data] = (
                tuple(_call_type(t) for t in ftype.inputs.data),
                None if void else _call_type(ftype.output),
            )
    return out
