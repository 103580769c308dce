"""Register-level fusion: which generics run inside a reduction kernel's loop nest.

Around a reduction kernel G writing T, the generic that initializes T (the prologue) can compute
the accumulators' initial value in registers, and a chain of elementwise generics reading T (the
epilogues) can run on the finished accumulators before the single store, so T never makes the
round trip through memory. This module only decides; stages.py and the loop nest carry it out.

Shared: the CPU and GPU lowerings fuse the same generics (a GPU kernel is one fused nest), so
they plan fusion, and adjust the schedule of a fused nest, with the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DenseArrayBase, MemRefType
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap

from dialects.attributes import PRIVATE_ARGS_ATTR
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo, analyze_kernel
from passes.schedule.attached import schedule_of
from passes.schedule.rules import body_vectorizes


@dataclass
class Fusion:
    """Generics fused around a reduction kernel G writing T: a prologue that computes T's initial
    value, and elementwise epilogues applied to the finished value before the single store."""

    prologue: linalg.GenericOp | None
    epilogues: list[linalg.GenericOp]
    chain_input: dict[linalg.GenericOp, int]  # which input of each epilogue is the running value

    def generics(self) -> list[linalg.GenericOp]:
        """The fused generics: the prologue (if any), then the epilogues."""
        return [g for g in [self.prologue, *self.epilogues] if g is not None]


def has_tiled_reduction(sched: Schedule, kernel: linalg.GenericOp) -> bool:
    """Whether a reduction loop of the kernel is split into cache tiles by its schedule."""
    extents = analyze_kernel(kernel).extents
    return any(
        it.data == IteratorType.REDUCTION and 0 < sched.tile[d] < extents[d]
        for d, it in enumerate(kernel.iterator_types)
    )


def is_identity_parallel(generic: linalg.GenericOp, value: SSAValue) -> bool:
    """The generic is all-parallel, writes one buffer with an identity map over `value`'s shape,
    and does not read its output: one point of it per point of T, as the register tile needs."""
    if (
        generic.results
        or len(generic.outputs) != 1
        or any(it.data != IteratorType.PARALLEL for it in generic.iterator_types)
    ):
        return False
    out_map = generic.indexing_maps.data[-1].data
    shape = value.type.get_shape() if isinstance(value.type, MemRefType) else None
    out_type = generic.outputs[0].type
    return (
        shape is not None
        and out_map == AffineMap.identity(len(shape))
        and isinstance(out_type, MemRefType)
        and tuple(out_type.get_shape()) == tuple(shape)
        and not generic.body.block.args[-1].uses
    )


def root_buffer(value: SSAValue) -> SSAValue:
    """The buffer a view (subview, expand/collapse) was taken of."""
    while isinstance(value.owner, memref.SubviewOp | memref.ExpandShapeOp | memref.CollapseShapeOp):
        value = value.owner.operands[0]
    return value


def private_args(fn: func.FuncOp) -> set[SSAValue]:
    """The function's arguments that outline-kernels marked as intermediates nobody reads after."""
    attr = fn.attributes.get(PRIVATE_ARGS_ATTR)
    if not isinstance(attr, DenseArrayBase):
        return set()
    return {fn.body.block.args[i] for i in attr.get_values()}


def _find_prologue(
    kernel: linalg.GenericOp, target: SSAValue, vectorized: bool
) -> linalg.GenericOp | None:
    """The generic that initializes `target` right before the kernel, when it is the only one."""
    before = [
        use.operation
        for use in target.uses
        if use.operation is not kernel and use.operation.is_before_in_block(kernel)
    ]
    if len(before) != 1 or not isinstance(before[0], linalg.GenericOp):
        return None
    candidate = before[0]
    if (
        list(candidate.outputs) == [target]
        and is_identity_parallel(candidate, target)
        and (not vectorized or body_vectorizes(candidate.body.block))
    ):
        return candidate
    return None


def find_fusion(kernel: linalg.GenericOp, vectorized: bool) -> Fusion | None:
    """The prologue/epilogue generics that can run in the kernel's register tile, if any.

    Fusing an epilogue skips writing the kernel's output T, so T must be one of the kernel
    function's private arguments (an intermediate nobody reads after the kernel: see
    outline-kernels).
    """
    if (
        not any(it.data == IteratorType.REDUCTION for it in kernel.iterator_types)
        or len(kernel.outputs) != 1
    ):
        return None
    fn = kernel.parent_op()
    if not isinstance(fn, func.FuncOp):
        return None
    private = private_args(fn)
    target = kernel.outputs[0]
    prologue = _find_prologue(kernel, target, vectorized)
    epilogues: list[linalg.GenericOp] = []
    chain: dict[linalg.GenericOp, int] = {}
    current = target
    while True:
        readers = list(
            dict.fromkeys(
                use.operation
                for use in current.uses
                if use.operation not in (kernel, prologue, *epilogues)
            )
        )
        if len(readers) != 1 or not isinstance(readers[0], linalg.GenericOp):
            break
        epilogue = readers[0]
        # the running value never reaches memory: fine when nobody else reads it after the kernel
        # (a private argument) or when the epilogue overwrites it in place
        is_private = current in private and current is root_buffer(current)
        if not (is_private or list(epilogue.outputs) == [current]):
            break
        inputs = list(epilogue.inputs)
        if inputs.count(current) != 1 or not is_identity_parallel(epilogue, current):
            break
        chained = inputs.index(current)
        rank = len(current.type.get_shape())  # type: ignore[attr-defined]
        if epilogue.indexing_maps.data[chained].data != AffineMap.identity(rank):
            break
        if vectorized and not body_vectorizes(epilogue.body.block):
            break
        epilogues.append(epilogue)
        chain[epilogue] = chained
        current = epilogue.outputs[0]
    if prologue is None and not epilogues:
        return None
    return Fusion(prologue, epilogues, chain)


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
            fused.update(fusion.generics())
    return plans


def fused_schedule(sched: Schedule, info: KernelInfo) -> Schedule:
    """The schedule of a kernel with fused stages: they know the first and last tile of one
    reduction loop only, so the tiled reduction loops after the first in the order are untiled."""
    reductions = [
        d
        for d in sched.order
        if info.iterators[d] == "reduction" and 0 < sched.tile[d] < info.extents[d]
    ]
    tile = tuple(0 if d in reductions[1:] else t for d, t in enumerate(sched.tile))
    return replace(sched, tile=tile)
