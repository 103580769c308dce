"""Helpers shared by the `convert-*-to-llvm` passes.

Each conversion is independent: it rewrites its own ops to `llvm` ops on converted types
(`index` -> i64, any memref -> one bare `!llvm.ptr`) and bridges to not-yet-converted neighbours
with `builtin.unrealized_conversion_cast`, exactly as MLIR's partial conversions do; the casts
meet and vanish in `reconcile-unrealized-casts`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

PTR = llvm.LLVMPointerType()


def convert_type(t: Attribute) -> Attribute:
    """The LLVM-level type of `t` (bare-pointer memrefs, 64-bit index)."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return PTR
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(i64, t.get_shape())
    return t


def cast_value(value: SSAValue, target: Attribute, point: InsertPoint) -> SSAValue:
    """`value` as type `target`, folding a cast that undoes an earlier one."""
    if value.type == target:
        return value
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and owner.inputs[0].type == target
    ):
        return owner.inputs[0]
    cast = UnrealizedConversionCastOp.get([value], [target])
    Rewriter.insert_op(cast, point)
    return cast.results[0]


def operand(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> SSAValue:
    """`value` converted to its LLVM type, materialized just before `op`."""
    del rewriter
    return cast_value(value, convert_type(value.type), InsertPoint.before(op))


def operands(rewriter: PatternRewriter, op: Operation) -> list[SSAValue]:
    return [operand(rewriter, op, v) for v in op.operands]


def replace(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue | None],
) -> None:
    """Replace `op` by `new_ops`, casting results back to the types `op`'s users expect."""
    casts: list[Operation] = []
    values: list[SSAValue | None] = []
    for old, new in zip(op.results, new_results, strict=True):
        if new is None or new.type == old.type:
            values.append(new)
            continue
        cast = UnrealizedConversionCastOp.get([new], [old.type])
        casts.append(cast)
        values.append(cast.results[0])
    rewriter.replace(op, [*new_ops, *casts], values)


def const_int(value: int, type: Attribute = i64) -> llvm.ConstantOp:
    assert isinstance(type, IntegerType)
    return llvm.ConstantOp(IntegerAttr(value, type), type)


def const_float(value: float, type: Attribute) -> llvm.ConstantOp:
    """A scalar or splat-vector float constant."""
    if isinstance(type, VectorType):
        return llvm.ConstantOp(
            DenseIntOrFPElementsAttr.from_list(type, [value] * _num_elements(type)),
            type,
        )
    if not isinstance(type, AnyFloat):
        raise TypeError(f"expected a float (or float vector) type, got {type}")
    return llvm.ConstantOp(FloatAttr(value, type), type)


def _num_elements(type: VectorType) -> int:
    n = 1
    for d in type.get_shape():
        n *= d
    return n


def static_strides(memref_type: MemRefType) -> list[int]:
    """The strides of `memref_type`; ValueError if its layout has dynamic (or no) strides."""
    strides = memref_type.get_strides()
    static = [s for s in strides or () if s is not None]
    if strides is None or len(static) != len(strides):
        raise ValueError(f"dynamic strides/offset unsupported: {memref_type}")
    return static


def element_ptr(
    memref_type: MemRefType, base: SSAValue, indices: Sequence[SSAValue]
) -> tuple[list[Operation], SSAValue]:
    """GEP to element `indices` (i64 values) of a bare-pointer memref: o + sum(i_k * s_k)."""
    strides = static_strides(memref_type)
    offset = memref_type.get_offset()
    if offset is None:
        raise ValueError(f"dynamic strides/offset unsupported: {memref_type}")
    ops: list[Operation] = []
    linear: SSAValue | None = None
    nsw = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])
    for index, stride in zip(indices, strides, strict=True):
        known = constant_int(index)
        if known is not None:  # fold constant indices into the static offset: far fewer ops
            offset += known * stride
            continue
        term = index
        if stride != 1:
            c = const_int(stride)
            mul = llvm.MulOp(index, c.result, overflow=nsw)
            ops += [c, mul]
            term = mul.res
        if linear is None:
            linear = term
        else:
            add = llvm.AddOp(linear, term, overflow=nsw)
            ops.append(add)
            linear = add.res
    if offset:
        c = const_int(offset)
        ops.append(c)
        if linear is None:
            linear = c.result
        else:
            add = llvm.AddOp(linear, c.result, overflow=nsw)
            ops.append(add)
            linear = add.res
    if linear is None:
        return ops, base
    elem = convert_type(memref_type.element_type)
    gep = llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[linear], inbounds=True)
    ops.append(gep)
    return ops, gep.result


def constant_int(value: SSAValue) -> int | None:
    """The integer a value is known to hold (through conversion casts), or None."""
    owner = value.owner
    while isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        owner = owner.inputs[0].owner
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp):
        attr = owner.value
        if isinstance(attr, IntegerAttr):
            return int(attr.value.data)
    return None


def element_size(type: Attribute) -> int:
    """Byte size of a scalar element type (used for alignments and allocation sizes)."""
    type = convert_type(type)
    if isinstance(type, IntegerType):
        return max(1, type.width.data // 8)
    width = getattr(type, "bitwidth", None)
    if width is None:
        raise ValueError(f"unsupported element type {type}")
    return width // 8


def lower_load(
    rewriter: PatternRewriter, op: Operation, memref_type: Attribute, result_type: Attribute
) -> None:
    """Replace a load `op` (operands: the memref, then one index per dimension) by the address
    computation and an `llvm.load` of `result_type` (a scalar or a vector of elements)."""
    assert isinstance(memref_type, MemRefType)
    base, *idx = operands(rewriter, op)
    ops, ptr = element_ptr(memref_type, base, idx)
    load = llvm.LoadOp(
        ptr, convert_type(result_type), alignment=element_size(memref_type.element_type)
    )
    replace(rewriter, op, [*ops, load], [load.dereferenced_value])


def lower_store(rewriter: PatternRewriter, op: Operation, memref_type: Attribute) -> None:
    """Replace a store `op` (operands: the value, the memref, then one index per dimension) by
    the address computation and an `llvm.store`."""
    assert isinstance(memref_type, MemRefType)
    value, base, *idx = operands(rewriter, op)
    ops, ptr = element_ptr(memref_type, base, idx)
    store = llvm.StoreOp(value, ptr, alignment=element_size(memref_type.element_type))
    replace(rewriter, op, [*ops, store], [])


def rewrite_once(module: ModuleOp, patterns: Sequence[RewritePattern]) -> None:
    """One walk over `module`: each op is rewritten by the first of `patterns` that matches it,
    and what they build is not walked again (the ops it holds are already LLVM's)."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(patterns)), apply_recursively=False
    ).rewrite_module(module)


def declare_function(
    module: ModuleOp, name: str, inputs: Sequence[Attribute], output: Attribute
) -> None:
    """Declare external `llvm.func @name` once per module (libc/libm calls)."""
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.sym_name.data == name:
            return
    func = llvm.FuncOp(
        name,
        llvm.LLVMFunctionType(list(inputs), output),
        linkage=llvm.LinkageAttr("external"),
    )
    module.body.block.add_op(func)


def retype_block_args(block: Block) -> None:
    """Give `block`'s arguments their LLVM types; old users see a cast at the block start."""
    for i, arg in enumerate(list(block.args)):
        new_type = convert_type(arg.type)
        if new_type == arg.type:
            continue
        new_arg = block.insert_arg(new_type, i)
        new_arg.name_hint = arg.name_hint
        cast = UnrealizedConversionCastOp.get([new_arg], [arg.type])
        if block.first_op is None:
            block.add_op(cast)
        else:
            block.insert_op_before(cast, block.first_op)
        arg.replace_all_uses_with(cast.results[0])
        block.erase_arg(arg)
