"""Operand packing (`#sched.schedule` pack): copy what a cache tile reads into a dense panel.

A tile of a strided operand (a convolution's weights, a matmul's B) touches memory spread over
many cache lines and pages; copying the box of it that the tile reads into a contiguous stack
panel first makes every later read of the tile a unit-stride one, at the cost of one copy per
tile (see passes/transforms/pack.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from xdsl.dialects import arith, memref
from xdsl.ir import Attribute, SSAValue

from passes.analysis.kernel_access import OperandAccess
from passes.conversions.linalg_to_loops.emitter import Emitter, Pos
from passes.conversions.linalg_to_loops.operand_io import OperandIO

PanelMaker = Callable[[int, Attribute, list[int]], SSAValue]
"""`(operand, element type, box) -> a 1-D buffer` holding the box's elements (row-major)."""
BoxCopy = Callable[[SSAValue, SSAValue, list[SSAValue], list[int], list[int]], None]
"""`(source, panel, corner, box, row-major strides)`: emits the copy of the box into the panel."""


def packed_operands(
    emitter: Emitter, io: OperandIO, operands: Sequence[int], start: list[Pos], size: list[int]
) -> AbstractContextManager[None]:
    """Copy the box of each packed operand that the tile at (start, size) reads into a stack
    panel; code generated inside the `with` reads those operands from the panels."""

    def stack_panel(operand: int, elem: Attribute, box: list[int]) -> SSAValue:
        return emitter.stack_buffer(("pack", operand, tuple(box)), elem, math.prod(box))

    def copy(
        src: SSAValue, panel: SSAValue, corner: list[SSAValue], box: list[int], strides: list[int]
    ) -> None:
        copy_box(emitter, src, panel, corner, box, strides)

    return operand_panels(emitter, io, operands, start, size, stack_panel, copy)


@contextmanager
def operand_panels(
    emitter: Emitter,
    io: OperandIO,
    operands: Sequence[int],
    start: list[Pos],
    size: list[int],
    make_panel: PanelMaker,
    copy: BoxCopy,
    fence: Callable[[], object] | None = None,
) -> Iterator[None]:
    """The shared mechanism of packing (a stack panel, copied by this thread) and GPU staging
    (a workgroup buffer, copied by all the block's threads, `fence` a barrier around the use):
    copy each operand's box of the tile into its panel, and read the operand from there inside
    the `with`."""
    saved = {operand: io.accesses[operand] for operand in operands}
    with emitter.scope():
        for operand in operands:
            access = io.accesses[operand]
            box = [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in access.coefs]
            strides = [math.prod(box[r + 1 :]) for r in range(len(box))]
            elem = access.value.type.element_type  # type: ignore[attr-defined]
            panel = make_panel(operand, elem, box)
            corner = [
                emitter.linear_index(row, access.consts[r], start)
                for r, row in enumerate(access.coefs)
            ]
            copy(access.value, panel, corner, box, strides)
            # read from the panel: linear index = sum_d linear[d] * pos_d - (the same at the start)
            linear = [
                sum(strides[r] * row[d] for r, row in enumerate(access.coefs))
                for d in range(io.num_loops)
            ]
            io.accesses[operand] = OperandAccess(
                panel, False, (math.prod(box),), (1,), 0, [linear], [0], linear
            )
            io.panel_origins[operand] = emitter.linear_index(linear, 0, start)
        if fence is not None:
            fence()
        try:
            yield
        finally:
            if fence is not None:
                fence()
            for operand, access in saved.items():
                io.accesses[operand] = access
                io.panel_origins.pop(operand, None)


def copy_box(
    emitter: Emitter,
    src: SSAValue,
    panel: SSAValue,
    corner: list[SSAValue],
    box: list[int],
    strides: list[int],
) -> None:
    """panel[sum_r j_r * strides[r]] = src[corner_0 + j_0, ...] for j in the box (row-major)."""

    def level(dim: int, at: list[SSAValue], dst: SSAValue | None) -> None:
        if dim == len(box):
            element = emitter.insert(memref.LoadOp.get(src, at)).res
            emitter.insert(
                memref.StoreOp.get(element, panel, [dst if dst is not None else emitter.index(0)])
            )
            return

        def step(j: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            index = emitter.insert(arith.AddiOp(corner[dim], j)).result
            if strides[dim] == 1:
                offset = j
            else:
                offset = emitter.insert(arith.MuliOp(j, emitter.index(strides[dim]))).result
            if dst is not None:
                offset = emitter.insert(arith.AddiOp(dst, offset)).result
            level(dim + 1, [*at, index], offset)
            return []

        emitter.for_loop(emitter.index(0), emitter.index(box[dim]), 1, [], step)

    level(0, [], None)
