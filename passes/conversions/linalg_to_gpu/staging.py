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

from passes.analysis.kernel_access import OperandAccess
from passes.conversions.linalg_to_loops.emitter import Emitter, Pos
from passes.conversions.linalg_to_loops.operand_io import OperandIO

WorkgroupBuffer = Callable[[int, Attribute, int], SSAValue]
"""`(operand, element type, elements) -> a 1-D workgroup buffer` (memref<N x T, 3>)."""


def box_of(access: OperandAccess, size: Sequence[int]) -> list[int]:
    """The extent of each of the operand's dimensions that a tile of loop extents `size` reads."""
    return [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in access.coefs]


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
            box = box_of(access, size)
            strides = [math.prod(box[r + 1 :]) for r in range(len(box))]
            elem = access.value.type.element_type  # type: ignore[attr-defined]
            panel = buffer(operand, elem, math.prod(box))
            corner = [
                emitter.linear_index(row, access.consts[r], start)
                for r, row in enumerate(access.coefs)
            ]
            _cooperative_copy(emitter, access.value, panel, corner, box, strides, thread, threads)
            linear = [
                sum(strides[r] * row[d] for r, row in enumerate(access.coefs))
                for d in range(io.num_loops)
            ]
            io.accesses[operand] = OperandAccess(
                panel, False, (math.prod(box),), (1,), 0, [linear], [0], linear
            )
            io.panel_origins[operand] = emitter.linear_index(linear, 0, start)
        emitter.insert(gpu.BarrierOp())
        try:
            yield
        finally:
            emitter.insert(gpu.BarrierOp())
            for operand, access in saved.items():
                io.accesses[operand] = access
                io.panel_origins.pop(operand, None)


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
