"""Operands staged in workgroup memory: the GPU form of operand packing (linalg_to_loops/packing).

At every step of a block's reduction loop, the box of each staged operand that the block reads
is copied into a workgroup buffer by all the block's threads together (thread t copies elements
t, t + threads, ...: neighbouring threads read neighbouring addresses), a barrier makes the copy
visible, the threads compute from the buffer, and a second barrier keeps the next step's copy
from overwriting what a slower thread still reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, gpu, memref
from xdsl.ir import Attribute, SSAValue

from passes.conversions.linalg_to_loops.emitter import Emitter, Pos
from passes.conversions.linalg_to_loops.operand_io import OperandIO
from passes.conversions.linalg_to_loops.packing import (
    box_corner,
    box_strides,
    panel_box,
    read_from_panel,
    restore,
)

WorkgroupBuffer = Callable[[int, Attribute, int], SSAValue]
"""`(operand, element type, elements) -> a 1-D workgroup buffer` (memref<N x T, 3>)."""


@contextmanager
def staged_operands(
    emitter: Emitter,
    io: OperandIO,
    operands: Sequence[int],
    start: list[Pos],
    size: list[int],
    thread: SSAValue,
    threads: int,
    buffer: WorkgroupBuffer,
) -> Iterator[None]:
    """Copy each staged operand's box of the tile at (start, size) into its workgroup buffer
    (cooperatively, `thread` of `threads`); code generated inside reads the buffers."""
    saved = {operand: io.accesses[operand] for operand in operands}
    with emitter.scope():
        for operand in operands:
            access = io.accesses[operand]
            box = panel_box(access, size)
            elem = access.value.type.element_type  # type: ignore[attr-defined]
            panel = buffer(operand, elem, math.prod(box))
            corner = box_corner(emitter, access, start)
            strides = box_strides(box)
            _cooperative_copy(emitter, access.value, panel, corner, box, strides, thread, threads)
            read_from_panel(emitter, io, operand, panel, box, start)
        emitter.insert(gpu.BarrierOp())
        try:
            yield
        finally:
            emitter.insert(gpu.BarrierOp())
            restore(io, saved)


def _cooperative_copy(
    emitter: Emitter,
    src: SSAValue,
    panel: SSAValue,
    corner: list[SSAValue],
    box: list[int],
    strides: list[int],
    thread: SSAValue,
    threads: int,
) -> None:
    """panel[e] = src[corner + coordinates of e in the box] for e = thread, thread + threads, ..."""
    total = math.prod(box)

    def body(e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        indices = []
        for r, extent in enumerate(box):
            if extent == 1:
                indices.append(corner[r])
                continue
            coord = e
            if strides[r] > 1:
                coord = emitter.insert(arith.DivUIOp(coord, emitter.index(strides[r]))).result
            if r > 0:  # e < total: the outermost coordinate needs no remainder
                coord = emitter.insert(arith.RemUIOp(coord, emitter.index(extent))).result
            indices.append(emitter.insert(arith.AddiOp(corner[r], coord)).result)
        element = emitter.insert(memref.LoadOp.get(src, indices)).res
        emitter.insert(memref.StoreOp.get(element, panel, [e]))
        return []

    emitter.for_loop(thread, emitter.index(total), threads, [], body)
