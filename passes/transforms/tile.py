"""`tile{sizes=...}`: cache-level tile sizes of a kernel's loops (0 keeps a loop untiled).

A size is 0..2**31; one past its loop's extent is clamped to the extent (the loop stays untiled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.transforms.schedule_edit import (
    check_op_option,
    check_per_loop_option,
    divisors,
    edit_schedules,
    per_loop,
    spread,
)

MAX_TILE_CANDIDATES = 8
MIN_TILED_REDUCTION = 8


@dataclass(frozen=True)
class TilePass(ModulePass):
    name = "tile"

    sizes: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    @staticmethod
    def schedule_space(info: KernelInfo, defaults: Sequence[Schedule] = ()) -> dict[int, list[int]]:
        """Cache-tile candidates per loop (0, untiled, is always allowed besides): proper divisors
        of the extent, evenly thinned out, plus the tiles the given default schedules use. Short
        reductions are never tiled."""
        out: dict[int, list[int]] = {}
        for d, e in enumerate(info.extents):
            if info.iterators[d] == "reduction" and e < MIN_TILED_REDUCTION:
                cands: list[int] = []
            else:
                cands = spread([k for k in divisors(e) if 1 < k < e], MAX_TILE_CANDIDATES)
            for s in defaults:
                if 0 < s.tile[d] < e and s.tile[d] not in cands:
                    cands = sorted([*cands, s.tile[d]])
            out[d] = cands
        return out

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_per_loop_option(
            self.name, "sizes", self.sizes, 0, " (0: untiled; a size past the loop's extent is cut to it)"
        )
        check_op_option(self.name, self.op)
        edit_schedules(
            op, self.kernel, self.name,
            lambda s, info: replace(s, tile=per_loop(self.sizes, info, "tile sizes")),
            self.op,
        )
