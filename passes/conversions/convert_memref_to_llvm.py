"""convert-memref-to-llvm: memrefs become ONE bare `!llvm.ptr` (levels.md, LLVM level).

Static shapes only, so no descriptor is needed: the layout offset and strides are folded into
each access's GEP, and every view op (subview, expand/collapse_shape, cast, reinterpret_cast) is
the same pointer with a new type. memref.view is a byte GEP; alloc is `aligned_alloc(64, n)`, except @main's arena, which a slot
keeps between calls (`_arena_runtime`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    TensorType,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects.attributes import ARENA_SLOT_ATTR, RELEASE_ARENAS_FUNCTION
from passes.analysis.main_function import main_function
from passes.analysis.memref_layouts import is_static_layout
from passes.analysis.pass_errors import op_error
from passes.conversions.llvm_common import (
    PTR,
    const_int,
    convert_type,
    declare_function,
    element_size,
    lower_load,
    lower_store,
    operand,
    replace,
    rewrite_once,
    static_strides,
)

ALIGNMENT = 64


def _byte_size(mtype: MemRefType) -> int:
    """Bytes spanned by a static memref (its largest reachable element + 1)."""
    strides = static_strides(mtype)
    offset = mtype.get_offset() or 0
    last = offset + sum((d - 1) * s for d, s in zip(mtype.get_shape(), strides, strict=True))
    if 0 in mtype.get_shape():
        last = -1
    return (last + 1) * element_size(mtype.element_type)


class LoadLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter) -> None:
        lower_load(rewriter, op, op.memref.type, op.res.type)


class StoreLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter) -> None:
        lower_store(rewriter, op, op.memref.type)


def _mark_arenas(module: ModuleOp) -> int:
    """Give each alloc at the top of @main that one dealloc there frees (the memory plan's
    arena) a slot; the number of slots."""
    main = main_function(module)
    if main is None or not main.body.blocks:
        return 0
    block = main.body.blocks[0]
    slots = 0
    for op in block.ops:
        if not isinstance(op, memref.AllocOp) or op.dynamic_sizes:
            continue
        frees = [u.operation for u in op.memref.uses if isinstance(u.operation, memref.DeallocOp)]
        if len(frees) != 1 or frees[0].parent is not block:
            continue
        op.attributes[ARENA_SLOT_ATTR] = frees[0].attributes[ARENA_SLOT_ATTR] = IntegerAttr(
            slots, 64
        )
        slots += 1
    return slots


def _arena_runtime(slots: int) -> str:
    """@main's arena outlives the call: a large one would otherwise be mapped fresh by malloc
    and page-faulted in at every call (GPT-2's 51 MB: 12,570 faults, about 25 ms a call).
    Each slot holds one free arena; a call takes it (an atomic exchange with null: a second
    call running at the same time finds null and allocates its own) and gives it back (the
    exchange frees what the slot held, null or another call's arena)."""
    globals_ = "".join(
        f"llvm.mlir.global internal @__ziggurat_arena_{k}(0 : i64) "
        "{addr_space = 0 : i32, alignment = 8 : i64} : i64\n"
        for k in range(slots)
    )
    release = "".join(
        f"  %s{k} = llvm.mlir.addressof @__ziggurat_arena_{k} : !llvm.ptr\n"
        f"  %o{k} = llvm.atomicrmw xchg %s{k}, %null acq_rel : !llvm.ptr, !llvm.ptr\n"
        f"  llvm.call @free(%o{k}) : (!llvm.ptr) -> ()\n"
        for k in range(slots)
    )
    return f"""builtin.module {{
{globals_}llvm.func internal @__ziggurat_arena_take(%slot: !llvm.ptr, %n: i64) -> !llvm.ptr {{
  %null = llvm.mlir.zero : !llvm.ptr
  %kept = llvm.atomicrmw xchg %slot, %null acq_rel : !llvm.ptr, !llvm.ptr
  %address = llvm.ptrtoint %kept : !llvm.ptr to i64
  %zero = llvm.mlir.constant(0 : i64) : i64
  %none = llvm.icmp "eq" %address, %zero : i64
  llvm.cond_br %none, ^fresh, ^done(%kept : !llvm.ptr)
^fresh:
  %align = llvm.mlir.constant({ALIGNMENT} : i64) : i64
  %new = llvm.call @aligned_alloc(%align, %n) : (i64, i64) -> !llvm.ptr
  llvm.br ^done(%new : !llvm.ptr)
^done(%arena: !llvm.ptr):
  llvm.return %arena : !llvm.ptr
}}
llvm.func internal @__ziggurat_arena_give(%slot: !llvm.ptr, %arena: !llvm.ptr) {{
  %old = llvm.atomicrmw xchg %slot, %arena acq_rel : !llvm.ptr, !llvm.ptr
  llvm.call @free(%old) : (!llvm.ptr) -> ()
  llvm.return
}}
llvm.func @{RELEASE_ARENAS_FUNCTION}() {{
  %null = llvm.mlir.zero : !llvm.ptr
{release}  llvm.return
}}
}}"""


def _add_arena_runtime(ctx: Context, module: ModuleOp, slots: int) -> None:
    declare_function(module, "aligned_alloc", [i64, i64], PTR)
    declare_function(module, "free", [PTR], llvm.LLVMVoidType())
    parsed = Parser(ctx, _arena_runtime(slots)).parse_module()
    added = list(parsed.ops)
    for op in added:
        op.detach()
        module.body.block.add_op(op)
    for op in added:
        op.verify()


def _slot(op: Operation) -> llvm.AddressOfOp | None:
    slot = op.attributes.get(ARENA_SLOT_ATTR)
    if not isinstance(slot, IntegerAttr):
        return None
    return llvm.AddressOfOp(f"__ziggurat_arena_{slot.value.data}", PTR)


class AllocLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter) -> None:
        mtype = op.memref.type
        assert isinstance(mtype, MemRefType)
        if op.symbol_operands:
            raise op_error(op, "memref.alloc with symbol operands")
        if op.dynamic_sizes:
            ops, nbytes = _run_time_bytes(op, mtype, rewriter)
        else:
            size = const_int(-(-max(_byte_size(mtype), 1) // ALIGNMENT) * ALIGNMENT)
            ops, nbytes = [size], size.result
        slot = _slot(op)
        if slot is not None:  # @main's arena, kept between calls
            call = llvm.CallOp("__ziggurat_arena_take", slot.result, nbytes, return_type=PTR)
            replace(rewriter, op, [slot, *ops, call], [call.returned])
            return
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        declare_function(module, "aligned_alloc", [i64, i64], PTR)
        align = const_int(ALIGNMENT)
        call = llvm.CallOp("aligned_alloc", align.result, nbytes, return_type=PTR)
        replace(rewriter, op, [align, *ops, call], [call.returned])


def _run_time_bytes(
    op: memref.AllocOp, mtype: MemRefType, rewriter: PatternRewriter
) -> tuple[list[Operation], SSAValue]:
    """The ops computing an alloc's run-time byte size, and it: the product of the sizes,
    rounded up to the alignment (at least one alignment, as for an empty static buffer)."""
    if not isinstance(mtype.layout, NoneAttr):
        raise op_error(op, f"memref.alloc of {mtype}: run-time sizes need the row-major layout")
    static = 1
    for d in mtype.get_shape():
        static *= 1 if d == DYNAMIC_INDEX else d
    ops: list[Operation] = []
    total = const_int(static * element_size(mtype.element_type))
    ops.append(total)
    count: SSAValue = total.result
    for size in op.dynamic_sizes:
        mul = llvm.MulOp(count, operand(rewriter, op, size))
        ops.append(mul)
        count = mul.res
    round_up, mask, zero, least = (
        const_int(ALIGNMENT - 1),
        const_int(-ALIGNMENT),
        const_int(0),
        const_int(ALIGNMENT),
    )
    padded = llvm.AddOp(count, round_up.result)
    rounded = llvm.AndOp(padded.res, mask.result)
    empty = llvm.ICmpOp(rounded.res, zero.result, IntegerAttr(0, 64))  # eq
    nbytes = llvm.SelectOp(empty.res, least.result, rounded.res)
    ops += [round_up, mask, zero, least, padded, rounded, empty, nbytes]
    return ops, nbytes.res


class AllocaLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter) -> None:
        mtype = op.memref.type
        assert isinstance(mtype, MemRefType)
        size = const_int(max(_byte_size(mtype), 1))
        alloca = llvm.AllocaOp(size.result, i8, alignment=ALIGNMENT)
        replace(rewriter, op, [size, alloca], [alloca.res])


class DeallocLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter) -> None:
        slot = _slot(op)
        if slot is not None:  # back into its slot for the next call
            give = llvm.CallOp(
                "__ziggurat_arena_give", slot.result, operand(rewriter, op, op.memref)
            )
            replace(rewriter, op, [slot, give], [])
            return
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        declare_function(module, "free", [PTR], llvm.LLVMVoidType())
        call = llvm.CallOp("free", operand(rewriter, op, op.memref))
        replace(rewriter, op, [call], [])


class ViewLowering(RewritePattern):
    """memref.view = GEP i8 by the byte shift (the result type's own offset is 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter) -> None:
        src = operand(rewriter, op, op.source)
        shift = operand(rewriter, op, op.byte_shift)
        gep = llvm.GEPOp(src, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[shift], inbounds=True)
        replace(rewriter, op, [gep], [gep.result])


class SamePointer(RewritePattern):
    """Views whose result addresses the same base pointer: only the memref type changes."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(
            op,
            memref.SubviewOp
            | memref.ExpandShapeOp
            | memref.CollapseShapeOp
            | memref.CastOp
            | memref.ReinterpretCastOp
            | memref.AssumeAlignmentOp,
        ):
            return
        for v in op.operands[1:]:
            if isinstance(v.type, MemRefType):
                raise NotImplementedError(f"{op.name} with several memref operands")
        result = op.results[0].type if op.results else None
        if (
            isinstance(result, MemRefType)
            and not is_static_layout(result)
            and not isinstance(result.layout, NoneAttr)  # row-major from its base: same pointer
        ):
            # a view at a run-time offset or with run-time strides: resolve-dynamic-memrefs
            # turns its accesses into ones through its root (run-time sizes alone are fine)
            raise op_error(
                op, f"{op.name} to {result} needs resolve-dynamic-memrefs first (run-time layout)"
            )
        if isinstance(op, memref.AssumeAlignmentOp) and not op.results:
            rewriter.erase_op(op)
            return
        src = operand(rewriter, op, op.operands[0])
        replace(rewriter, op, [], [src])


def _flat_initializer(value: Attribute) -> Attribute:
    """The dense initializer as 1-D data (the global is a flat !llvm.array)."""
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return value
    shape = value.get_shape()
    n = 1
    for d in shape or ():
        n *= d
    if shape is not None and len(shape) == 1:
        return value
    flat_type = TensorType(value.get_element_type(), [n])
    return DenseIntOrFPElementsAttr(flat_type, value.data)


class GlobalLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter) -> None:
        mtype = op.type
        assert isinstance(mtype, MemRefType)
        n = 1
        for d in mtype.get_shape():
            n *= d
        elem = convert_type(mtype.element_type)
        value = op.initial_value
        init = None if value is None or isinstance(value, UnitAttr) else _flat_initializer(value)
        visibility = op.sym_visibility.data if op.sym_visibility else "public"
        linkage = "private" if visibility == "private" else "external"
        align = op.alignment.value.data if op.alignment else ALIGNMENT
        glob = llvm.GlobalOp(
            llvm.LLVMArrayType(IntAttr(n), elem),
            op.sym_name,
            linkage,
            constant=op.constant is not None or None,
            value=init,
            alignment=max(align, ALIGNMENT),
        )
        rewriter.replace(op, glob)


class GetGlobalLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter) -> None:
        addr = llvm.AddressOfOp(op.name_, PTR)
        replace(rewriter, op, [addr], [addr.result])


@dataclass(frozen=True)
class ConvertMemRefToLLVMPass(ModulePass):
    """Lower static-shape memref ops to bare-pointer llvm ops."""

    name: ClassVar[str] = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        slots = _mark_arenas(op)
        if slots:
            _add_arena_runtime(ctx, op, slots)
        rewrite_once(
            op,
            [
                LoadLowering(),
                StoreLowering(),
                AllocLowering(),
                AllocaLowering(),
                DeallocLowering(),
                ViewLowering(),
                SamePointer(),
                GlobalLowering(),
                GetGlobalLowering(),
            ],
        )
