"""Operand panels: a tile's operands read from a dense copy of the box the tile reads.

The mechanism under CPU packing (linalg_to_loops/packing.py: a stack panel each thread copies
for itself) and GPU staging (linalg_to_gpu/staging.py: a workgroup buffer all the block's threads
copy together, between barriers). Shared: only who allocates the panel and who copies the box
differ; which box, its layout and how the operand is read from it are the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.ir import Attribute, SSAValue

from passes.analysis.kernel_access import OperandAccess
from passes.conversions.loop_codegen.emitter import Emitter, Pos
from passes.conversions.loop_codegen.operand_io import OperandIO

PanelMaker = Callable[[int, Attribute, list[int]], SSAValue]
"""`(operand, element type, box) -> a 1-D buffer` holding the box's elements (row-major)."""
BoxCopy = Callable[[SSAValue, SSAValue, list[SSAValue], list[int], list[int]], None]
"""`(source, panel, corner, box, row-major strides)`: emits the copy of the box into the panel."""


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
