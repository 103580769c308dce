"""convert-memref-to-llvm: memrefs become ONE bare `!llvm.ptr` (levels.md, LLVM level).

Static shapes only, so no descriptor is needed: the layout offset and strides are folded into
each access's GEP, and every view op (subview, expand/collapse_shape, cast, reinterpret_cast) is
the same pointer with a new type. memref.view is a byte GEP; alloc is `aligned_alloc(64, n)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

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


class AllocLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter) -> None:
        mtype = op.memref.type
        assert isinstance(mtype, MemRefType)
        if op.dynamic_sizes or op.symbol_operands:
            raise NotImplementedError("memref.alloc with dynamic sizes")
        size = -(-max(_byte_size(mtype), 1) // ALIGNMENT) * ALIGNMENT
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        declare_function(module, "aligned_alloc", [i64, i64], PTR)
        align = const_int(ALIGNMENT)
        nbytes = const_int(size)
        call = llvm.CallOp("aligned_alloc", align.result, nbytes.result, return_type=PTR)
        replace(rewriter, op, [align, nbytes, call], [call.returned])


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
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        declare_function(module, "free", [PTR], llvm.LLVMVoidType())
        call = llvm.CallOp("free", operand(rewriter, op, op.memref))
        replace(rewriter, op, [call], [])


class ViewLowering(RewritePattern):
    """memref.view = GEP i8 by the byte shift (the result type's own offset is 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter) -> None:
        if op.sizes:
            raise NotImplementedError("memref.view with dynamic sizes")
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
        if isinstance(op, memref.SubviewOp | memref.ReinterpretCastOp) and (len(op.operands) > 1):
            raise NotImplementedError(f"{op.name} with dynamic offsets/sizes/strides")
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
