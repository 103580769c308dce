"""linalg.fill as the equivalent linalg.generic, so one nest generator handles both.

Shared: the CPU and GPU lowerings both rewrite fills first (keeping their schedules), then plan
fusion and generate nests on generics only.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, MemRefType
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Block, Operation, Region
from xdsl.ir.affine import AffineMap
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME


def fill_to_generic(fill: linalg.FillOp) -> linalg.GenericOp:
    """linalg.fill on a memref as the equivalent generic, so one generator handles both."""
    out = fill.outputs[0]
    assert isinstance(out.type, MemRefType)
    rank = out.type.get_num_dims()
    block = Block(arg_types=[fill.inputs[0].type, out.type.element_type])
    block.add_op(linalg.YieldOp(block.args[0]))
    return linalg.GenericOp(
        inputs=[fill.inputs[0]],
        outputs=[out],
        body=Region(block),
        indexing_maps=[
            AffineMapAttr(AffineMap(rank, 0, ())),
            AffineMapAttr(AffineMap.identity(rank)),
        ],
        iterator_types=ArrayAttr([IteratorTypeAttr.parallel()] * rank),
        result_types=[],
    )


def fills_to_generics(root: Operation, pass_name: str) -> None:
    """Replace every linalg.fill inside `root` by its generic (keeping its schedule); a fill on a
    tensor is a user error of the pass `pass_name` (it runs after bufferize)."""
    for fill in [o for o in root.walk() if isinstance(o, linalg.FillOp)]:
        if not isinstance(fill.outputs[0].type, MemRefType):
            raise DiagnosticException(
                f"{pass_name} expects linalg.fill on memrefs (run bufferize first)"
            )
        generic = fill_to_generic(fill)
        if SCHEDULE_ATTR_NAME in fill.attributes:
            generic.attributes[SCHEDULE_ATTR_NAME] = fill.attributes[SCHEDULE_ATTR_NAME]
        Builder(InsertPoint.before(fill)).insert(generic)
        fill.detach()
        fill.erase()
