"""convert-graph-to-linalg: lower every `graph` op to the TENSOR level (levels.md).

Every computation becomes a `linalg.generic` (no named linalg ops), so the loop generator has a
single input form whose access strides it can read off the indexing maps. Data movement uses
tensor.{empty,extract_slice,insert_slice,expand_shape,collapse_shape}; weights stay dense
`arith.constant`s. The lowerings live in passes/conversions/graph_to_linalg/, one module per op
family; each family's pattern dispatches on the op's class and reads the properties the graph
dialect declares for it (defaults included).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.linalg.ops import FillOp, GenericOp
from xdsl.dialects.tensor import InsertSliceOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import DiagnosticException

from dialects.attributes import GROUP_ATTR
from dialects.graph import FusedOp
from passes.conversions.graph_to_linalg.contraction import CONTRACTIONS
from passes.conversions.graph_to_linalg.data_movement import DATA_MOVEMENT
from passes.conversions.graph_to_linalg.elementwise import ELEMENTWISE
from passes.conversions.graph_to_linalg.reduction import REDUCTIONS
from passes.conversions.graph_to_linalg.table import GraphLowering


class DataMovementLowering(GraphLowering):
    """Constants, forwarding ops (Identity, Dropout) and data movement."""

    lowerings = DATA_MOVEMENT


class ElementwiseLowering(GraphLowering):
    """Elementwise math, comparisons, logic, select, broadcast and casts."""

    lowerings = ELEMENTWISE


class ContractionLowering(GraphLowering):
    """Convolutions, Winograd transforms, matmul and Gemm."""

    lowerings = CONTRACTIONS


class ReductionLowering(GraphLowering):
    """Reductions, pooling and normalizations."""

    lowerings = REDUCTIONS


PATTERNS: tuple[type[GraphLowering], ...] = (
    DataMovementLowering,
    ElementwiseLowering,
    ContractionLowering,
    ReductionLowering,
)
"""One pattern per op family; `ops` names the graph ops each lowers."""

_KERNEL_OPS = (GenericOp, FillOp, InsertSliceOp)
"""The tensor-level ops of a fused group that become its kernel (and carry GROUP_ATTR)."""


def inline_fused_group(fused: FusedOp, group: int) -> None:
    """Replace a lowered `graph.fused` by its body, tagging the ops that will become its kernel."""
    block = fused.block
    for arg, value in zip(block.args, fused.operands, strict=True):
        arg.replace_all_uses_with(value)
    terminator = block.last_op
    assert terminator is not None
    results = list(terminator.operands)
    parent = fused.parent_block()
    assert parent is not None
    for inner in list(block.ops):
        if inner is terminator:
            break
        inner.detach()
        if isinstance(inner, _KERNEL_OPS):
            inner.attributes[GROUP_ATTR] = IntegerAttr(group, 64)
        parent.insert_op_before(inner, fused)
    for old, new in zip(fused.results, results, strict=True):
        old.replace_all_uses_with(new)
    fused.detach()
    fused.erase()


@dataclass(frozen=True)
class ConvertGraphToLinalgPass(ModulePass):
    """Lower the graph level to the tensor level; fails loudly on any graph op it cannot lower."""

    name = "convert-graph-to-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([p() for p in PATTERNS]), apply_recursively=False
        ).rewrite_module(op)
        for group, fused in enumerate([o for o in op.walk() if isinstance(o, FusedOp)]):
            inline_fused_group(fused, group)
        region_dce(op.body)
        left = sorted({o.name for o in op.walk() if o.name.startswith("graph.")})
        if left:
            raise DiagnosticException(f"convert-graph-to-linalg: no lowering for {left}")


__all__ = ["GROUP_ATTR", "PATTERNS", "ConvertGraphToLinalgPass", "inline_fused_group"]
