"""The `convert-linalg-to-loops` pass: find the kernels, plan fusion, check schedules, lower.

Each linalg.generic (and linalg.fill) on memrefs is replaced by the loop nest its
`#sched.schedule` describes (loop_nest.py builds it); a reduction kernel's initializer and
elementwise consumers run inside its nest when fusion.py finds them fusable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, MemRefType, ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Block, Operation, Region
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule
from passes.analysis.kernel_access import KernelAnalysisError, KernelInfo, analyze_kernel
from passes.conversions.linalg_to_loops.fusion import Fusion, find_fusion, has_tiled_reduction
from passes.conversions.linalg_to_loops.loop_nest import LoopNestGenerator
from passes.schedule.attached import schedule_of
from passes.schedule.rules import check_pack, check_parallel


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


def _checked_schedule(op: linalg.GenericOp, info: KernelInfo) -> Schedule:
    """The kernel's schedule (or the default one), rejected with a diagnostic when it does not
    fit the kernel."""
    sched = schedule_of(op, info)
    try:
        sched.check(info.num_loops)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    if sched.vector >= 0 and info.iterators[sched.vector] != "parallel":
        raise DiagnosticException("convert-linalg-to-loops: only parallel loops can be vectorized")
    if sched.split != 1:
        raise DiagnosticException(
            f"convert-linalg-to-loops: split = {sched.split} is a GPU knob (threads sharing a "
            "reduction); on the CPU each output's reduction runs on one thread (split = 1)"
        )
    try:
        check_parallel(sched, info)
        check_pack(sched, info)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    return sched


def lower_kernel(op: linalg.GenericOp, fusion: Fusion | None = None) -> None:
    """Replace one linalg.generic on memrefs (and the generics fused with it) by its loop nest."""
    try:
        info = analyze_kernel(op)
    except KernelAnalysisError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: {e}\n  in: {op}") from e
    if 0 in info.extents:  # a zero-size kernel runs no iterations: nothing to emit
        for fused in [op] + ([] if fusion is None else [fusion.prologue, *fusion.epilogues]):
            if fused is not None:
                fused.detach()
                fused.erase()
        return
    sched = _checked_schedule(op, info)
    if fusion is not None:
        # fused stages know the first and last reduction tile of one reduction loop only
        reductions = [
            d
            for d in sched.order
            if info.iterators[d] == "reduction" and 0 < sched.tile[d] < info.extents[d]
        ]
        tile = tuple(0 if d in reductions[1:] else t for d, t in enumerate(sched.tile))
        sched = replace(sched, tile=tile)
    LoopNestGenerator(info, sched, fusion).generate()
    if fusion is not None:
        for fused in [fusion.prologue, *fusion.epilogues]:
            if fused is not None:
                fused.detach()
                fused.erase()


def _fills_to_generics(module: ModuleOp) -> None:
    """Replace every linalg.fill by its generic (keeping its schedule)."""
    for fill in [o for o in module.walk() if isinstance(o, linalg.FillOp)]:
        if not isinstance(fill.outputs[0].type, MemRefType):
            raise DiagnosticException(
                "convert-linalg-to-loops expects linalg.fill on memrefs (run bufferize first)"
            )
        generic = fill_to_generic(fill)
        if SCHEDULE_ATTR_NAME in fill.attributes:
            generic.attributes[SCHEDULE_ATTR_NAME] = fill.attributes[SCHEDULE_ATTR_NAME]
        Builder(InsertPoint.before(fill)).insert(generic)
        fill.detach()
        fill.erase()


def plan_fusion(generics: list[linalg.GenericOp]) -> dict[Operation, Fusion]:
    """Every kernel's fusion, decided before anything is lowered (lowering erases generics)."""
    plans: dict[Operation, Fusion] = {}
    fused: set[Operation] = set()
    for kernel in generics:
        if kernel in fused:
            continue
        sched = schedule_of(kernel)
        fusion = find_fusion(kernel, sched.vector >= 0)
        if fusion is not None and has_tiled_reduction(sched, kernel):
            # with reduction cache tiles the initializer stays a loop nest of its own: fusing it
            # too would need a third copy of the nest for the first tile (compile time)
            fusion = replace(fusion, prologue=None) if fusion.epilogues else None
        if fusion is not None:
            plans[kernel] = fusion
            fused.update(s for s in [fusion.prologue, *fusion.epilogues] if s is not None)
    return plans


@dataclass(frozen=True)
class ConvertLinalgToLoopsPass(ModulePass):
    """Lower every linalg.generic / linalg.fill on memrefs to scheduled scf/vector loops."""

    name = "convert-linalg-to-loops"

    fuse: bool = True
    """Run a reduction's initializing generic and its elementwise consumers inside its loop
    nest (register-level producer/consumer fusion within one kernel function)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _fills_to_generics(op)
        generics = [o for o in op.walk() if isinstance(o, linalg.GenericOp)]
        if any(kernel.results for kernel in generics):
            raise DiagnosticException(
                "convert-linalg-to-loops expects linalg.generic on memrefs (run bufferize first)"
            )
        plans = plan_fusion(generics) if self.fuse else {}
        fused = {s for f in plans.values() for s in [f.prologue, *f.epilogues] if s is not None}
        for kernel in generics:
            if kernel not in fused:
                lower_kernel(kernel, plans.get(kernel))
