"""`pack{operands=I,J}`: copy each listed input's cache tile into a contiguous panel first.

Operand packing (as in BLIS/GotoBLAS GEMM and TVM's cache_read): at the start of every innermost
cache tile, the box of the operand that the tile reads is copied to a 64-byte-aligned stack panel
and the tile reads it from there. A panel has unit stride along its last dimension and no cache-set
conflicts or TLB misses from long row strides, at the price of one copy per tile; whether that
pays is for the tuner to find out. `operands` indexes the kernel's operands (inputs first, as in
the linalg.generic); an empty list turns packing off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.schedule_edit import check_op_option, edit_schedules, option_error

MAX_PANEL_ELEMENTS = 32 * 1024
"""A panel lives on the stack of the thread running the tile (128 KiB of f32 at most)."""


def tile_box(info: KernelInfo, s: Schedule) -> list[int]:
    """The extent of each loop within one full innermost cache tile."""
    return [t if 0 < t < e else e for t, e in zip(s.tile, info.extents)]


def panel_shape(info: KernelInfo, i: int, s: Schedule) -> list[int]:
    """The box of operand i that one full cache tile reads."""
    size = tile_box(info, s)
    return [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in info.accesses[i].coefs]


def packable(info: KernelInfo, i: int) -> bool:
    """An input memref (read-only in the kernel), indexed with non-negative coefficients."""
    inputs = len(info.op.inputs)
    if not 0 <= i < inputs:
        return False
    a = info.accesses[i]
    return (
        not a.is_scalar
        and bool(a.shape)
        and all(c >= 0 for row in a.coefs for c in row)
        and a.value not in set(info.op.outputs)
    )


def check_pack(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless every packed operand can be packed with this schedule's tiles."""
    inputs = len(info.op.inputs)
    for i in s.pack:
        if not 0 <= i < inputs:
            raise ValueError(
                f"option 'operands': {i} is out of range; allowed: 0..{inputs - 1} (the kernel's inputs; "
                "only inputs can be packed)"
            )
        if not packable(info, i):
            raise ValueError(f"operand {i} cannot be packed (only input memrefs of the kernel, 0..{len(info.op.inputs) - 1})")
        elements = math.prod(panel_shape(info, i, s))
        if elements > MAX_PANEL_ELEMENTS:
            raise ValueError(
                f"operand {i}: a panel of {elements} elements for one cache tile exceeds {MAX_PANEL_ELEMENTS} "
                "(tile the loops that index it)"
            )


@dataclass(frozen=True)
class PackPass(ModulePass):
    name = "pack"

    operands: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo) -> list[list[int]]:
        """Which operands to pack: none, or any subset of the (at most two) packable
        multi-dimensional inputs. Whether a panel fits depends on the tiles: see check_pack."""
        cands = [i for i in range(len(info.op.inputs)) if packable(info, i) and len(info.accesses[i].shape) > 1][:2]
        return [[], *([i] for i in cands), *([cands] if len(cands) == 2 else [])]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for i in self.operands:
            if i < 0:
                raise option_error(self.name, "operands", i, "an input operand of the kernel (0, 1, ...)")
        if len(set(self.operands)) != len(self.operands):
            raise DiagnosticException(
                f"{self.name}: option 'operands': {','.join(map(str, self.operands))} names an operand twice"
            )
        check_op_option(self.name, self.op)

        def edit(s: Schedule, info: KernelInfo) -> Schedule:
            new = replace(s, pack=tuple(self.operands))
            check_pack(new, info)
            return new

        edit_schedules(op, self.kernel, self.name, edit, self.op)
