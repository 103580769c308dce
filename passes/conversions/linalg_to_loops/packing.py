"""Operand packing (`#sched.schedule` pack): copy what a cache tile reads into a dense panel.

A tile of a strided operand (a convolution's weights, a matmul's B) touches memory spread over
many cache lines and pages; copying the box of it that the tile reads into a contiguous stack
panel first makes every later read of the tile a unit-stride one, at the cost of one copy per
tile (see passes/transforms/pack.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, memref
from xdsl.ir import SSAValue

from passes.analysis.kernel_access import OperandAccess
from passes.conversions.linalg_to_loops.emitter import Emitter, Pos
from passes.conversions.linalg_to_loops.operand_io import OperandIO


@contextmanager
def packed_operands(
    emitter: Emitter, io: OperandIO, operands: Sequence[int], start: list[Pos], size: list[int]
) -> Iterator[None]:
    """Copy the box of each packed operand that the tile at (start, size) reads into a stack
    panel; code generated inside the `with` reads those operands from the panels."""
    saved = {operand: io.accesses[operand] for operand in operands}
    with emitter.scope():
        for operand in operands:
            access = io.accesses[operand]
            box = panel_box(access, size)
            elem = access.value.type.element_type  # type: ignore[attr-defined]
            panel = emitter.stack_buffer(("pack", operand, tuple(box)), elem, math.prod(box))
            corner = box_corner(emitter, access, start)
            copy_box(emitter, access.value, panel, corner, box, box_strides(box))
            read_from_panel(emitter, io, operand, panel, box, start)
        try:
            yield
        finally:
            restore(io, saved)


def panel_box(access: OperandAccess, size: Sequence[int]) -> list[int]:
    """The extent of each of the operand's dimensions that a tile of loop extents `size` reads."""
    return [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in access.coefs]


def box_strides(box: Sequence[int]) -> list[int]:
    """Row-major strides of a panel holding `box`."""
    return [math.prod(box[r + 1 :]) for r in range(len(box))]


def box_corner(emitter: Emitter, access: OperandAccess, start: Sequence[Pos]) -> list[SSAValue]:
    """The operand's indices of the box's first element, for the tile starting at `start`."""
    return [
        emitter.linear_index(row, access.consts[r], start) for r, row in enumerate(access.coefs)
    ]


def read_from_panel(
    emitter: Emitter,
    io: OperandIO,
    operand: int,
    panel: SSAValue,
    box: Sequence[int],
    start: Sequence[Pos],
) -> None:
    """Make `io` read `operand` from `panel` (the box copied there) until `restore`: linear index
    = sum_d linear[d] * pos_d minus the same at the tile's start."""
    access = io.accesses[operand]
    strides = box_strides(box)
    linear = [
        sum(strides[r] * row[d] for r, row in enumerate(access.coefs)) for d in range(io.num_loops)
    ]
    io.accesses[operand] = OperandAccess(
        panel, False, (math.prod(box),), (1,), 0, [linear], [0], linear
    )
    io.panel_origins[operand] = emitter.linear_index(linear, 0, start)


def restore(io: OperandIO, saved: dict[int, OperandAccess]) -> None:
    """Read the operands from their buffers again (after read_from_panel)."""
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
