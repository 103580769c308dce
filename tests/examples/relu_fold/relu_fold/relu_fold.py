"""relu-fold: relu(relu(x)) -> relu(x), on ziggurat's graph level (before fuse-ops)."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects.graph import FusedOp, ReluOp
from passes.analysis.pass_errors import op_error


class FoldReluRelu(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReluOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner  # an Operation, or a Block for a block argument
        if isinstance(inner, ReluOp):
            rewriter.replace_all_uses_with(op.result, inner.result)
            rewriter.erase(op)


@dataclass(frozen=True)
class ReluFold(ModulePass):
    """Fold relu(relu(x)) into relu(x)."""

    name = "relu-fold"

    func: str = ""
    """Fold only in this function (default: every function)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, FuncOp)]
        if self.func:
            funcs = [f for f in funcs if f.sym_name.data == self.func]
            if not funcs:
                raise op_error(op, f"relu-fold: no function @{self.func} in this module")
        for f in funcs:
            for inner in f.walk():
                if isinstance(inner, FusedOp):
                    raise op_error(inner, "relu-fold runs on the graph level before fuse-ops")
            PatternRewriteWalker(FoldReluRelu()).rewrite_region(f.body)
