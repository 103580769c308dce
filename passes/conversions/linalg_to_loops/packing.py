"""Operand packing (`#sched.schedule` pack): copy what a cache tile reads into a dense panel.

A tile of a strided operand (a convolution's weights, a matmul's B) touches memory spread over
many cache lines and pages; copying the box of it that the tile reads into a contiguous stack
panel first makes every later read of the tile a unit-stride one, at the cost of one copy per
tile (see passes/transforms/pack.py). The panel mechanism is loop_codegen/panels.py, shared with
GPU staging; what is CPU-only here is the panel (a stack buffer) and the copy (by this thread).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager

from xdsl.dialects import arith, memref
from xdsl.ir import Attribute, SSAValue

from passes.conversions.loop_codegen.emitter import Emitter, Pos
from passes.conversions.loop_codegen.operand_io import OperandIO
from passes.conversions.loop_codegen.panels import operand_panels


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
