"""convert-index-to-llvm: the `index` type -> i64 wherever it survives in llvm ops.

xDSL 0.74 has no `index` dialect, so there are no index ops to lower; what this pass owns is
the type itself: llvm ops written with `index` operands/results (e.g. hand-written
`llvm.mlir.constant(0 : index) : index`) get i64, so the backend never sees `index`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from passes.conversions.llvm_common import convert_type, operands, replace


class IndexInLLVMOps(RewritePattern):
    """Rebuild an llvm op whose operand or result types mention `index`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() != "llvm" or op.regions or op.successors:
            return
        types = [*op.operand_types, *op.result_types]
        if not any(convert_type(t) != t for t in types):
            return
        properties = dict(op.properties)
        value = properties.get("value")
        if isinstance(value, IntegerAttr) and isinstance(value.type, IndexType):
            properties["value"] = IntegerAttr(value.value.data, i64)
        new = op.create(
            operands=operands(rewriter, op),
            result_types=[convert_type(t) for t in op.result_types],
            properties=properties,
            attributes=dict(op.attributes),
        )
        replace(rewriter, op, [new], list(new.results))


@dataclass(frozen=True)
class ConvertIndexToLLVMPass(ModulePass):
    """Give the remaining `index`-typed llvm ops their i64 type."""

    name: ClassVar[str] = "convert-index-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(IndexInLLVMOps(), apply_recursively=False).rewrite_module(op)
