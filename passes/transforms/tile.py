"""`tile{sizes=...}`: cache-level tile sizes of a kernel's loops (0 keeps a loop untiled).

A size is 0..2**31 - 1 (an int32); one past its loop's extent is clamped to the extent (the loop stays untiled).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_tile
from passes.schedule.options import check_per_loop_option


@dataclass(frozen=True)
class TilePass(ModulePass):
    name = "tile"

    sizes: tuple[int, ...] = ()
    """Cache tile size per loop of the kernel (0: untiled)."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_per_loop_option(
            self.name,
            "sizes",
            self.sizes,
            0,
            " (0: untiled; a size past the loop's extent is cut to it)",
        )
        edit_schedules(
            op, self.kernel, self.name, lambda s, info: set_tile(s, info, self.sizes), self.op
        )
