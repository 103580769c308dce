"""convert-cf-to-llvm: cf.br / cf.cond_br -> llvm.br / llvm.cond_br.

Non-entry block arguments get their LLVM types here (the entry block belongs to the function
signature, converted by convert-func-to-llvm); old users see an unrealized cast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from passes.conversions.llvm_common import operand, retype_block_args, rewrite_once


class BranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter) -> None:
        args = [operand(rewriter, op, v) for v in op.arguments]
        rewriter.replace(op, llvm.BrOp(op.successor, *args))


class CondBranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter) -> None:
        cond = operand(rewriter, op, op.cond)
        then_args = [operand(rewriter, op, v) for v in op.then_arguments]
        else_args = [operand(rewriter, op, v) for v in op.else_arguments]
        rewriter.replace(
            op, llvm.CondBrOp(cond, op.then_block, then_args, op.else_block, else_args)
        )


def _branch_targets(module: ModuleOp) -> list[Block]:
    """Blocks entered by a cf branch (never an entry block)."""
    seen: dict[Block, None] = {}
    for op in module.walk():
        if isinstance(op, cf.BranchOp | cf.ConditionalBranchOp):
            for succ in op.successors:
                seen[succ] = None
    return list(seen)


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lower unstructured control flow to llvm branches."""

    name: ClassVar[str] = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in _branch_targets(op):
            retype_block_args(block)
        rewrite_once(op, [BranchLowering(), CondBranchLowering()])
