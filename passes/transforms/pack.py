"""`pack{operands=I,J}`: copy each listed input's cache tile into a contiguous panel first.

Operand packing (as in BLIS/GotoBLAS GEMM and TVM's cache_read): at the start of every innermost
cache tile, the box of the operand that the tile reads is copied to a 64-byte-aligned stack panel
and the tile reads it from there. A panel has unit stride along its last dimension and no cache-set
conflicts or TLB misses from long row strides, at the price of one copy per tile; whether that
pays is for the tuner to find out. `operands` indexes the kernel's operands (inputs first, as in
the linalg.generic); an empty list turns packing off. Which operands can be packed, and how big a
panel may be, is passes/schedule/rules.py's check_pack.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.knobs import set_pack
from passes.schedule.options import option_error
from passes.transforms.knob_pass import KnobPass


@dataclass(frozen=True)
class PackPass(KnobPass):
    name = "pack"

    operands: tuple[int, ...] = ()
    """Indices of the input operands to pack (empty: none)."""

    def check_options(self) -> None:
        for i in self.operands:
            if i < 0:
                raise option_error(
                    self.name, "operands", i, "an input operand of the kernel (0, 1, ...)"
                )
        if len(set(self.operands)) != len(self.operands):
            raise DiagnosticException(
                f"{self.name}: option 'operands': {','.join(map(str, self.operands))} "
                "names an operand twice"
            )

    def set_knob(self, schedule: Schedule, info: KernelInfo) -> Schedule:
        return set_pack(schedule, info, self.operands)
