"""Operands staged in workgroup memory: the GPU form of operand packing (loop_codegen/panels.py).

At every step of a block's reduction loop, the box of each staged operand that the block reads
is copied into a workgroup buffer by all the block's threads together (thread t copies elements
t, t + threads, ...: neighbouring threads read neighbouring addresses), a barrier makes the copy
visible, the threads compute from the buffer, and a second barrier keeps the next step's copy
from overwriting what a slower thread still reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager

from xdsl.dialects import arith, gpu, memref
from xdsl.ir import SSAValue

from passes.conversions.loop_codegen.emitter import Emitter, Pos
from passes.conversions.loop_codegen.operand_io import OperandIO
from passes.conversions.loop_codegen.panels import PanelMaker, operand_panels


def staged_operands(
    emitter: Emitter,
    io: OperandIO,
    operands: Sequence[int],
    start: list[Pos],
    size: list[int],
    thread: SSAValue,
    threads: int,
    buffer: PanelMaker,
) -> AbstractContextManager[None]:
    """Copy each staged operand's box of the tile at (start, size) into its workgroup buffer
    (`buffer(operand, element type, box)`), cooperatively (`thread` of `threads`), between
    barriers; code generated inside the `with` reads the buffers."""

    def copy(
        src: SSAValue, panel: SSAValue, corner: list[SSAValue], box: list[int], strides: list[int]
    ) -> None:
        _cooperative_copy(emitter, src, panel, corner, box, strides, thread, threads)

    def barrier() -> None:
        emitter.insert(gpu.BarrierOp())

    return operand_panels(emitter, io, operands, start, size, buffer, copy, barrier)


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
