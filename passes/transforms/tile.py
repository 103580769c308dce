"""`tile{sizes=...}`: cache-level tile sizes of a kernel's loops (0 keeps a loop untiled)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.transforms.schedule_edit import edit_schedules, per_loop


@dataclass(frozen=True)
class TilePass(ModulePass):
    name = "tile"

    sizes: tuple[int, ...] = ()
    kernel: str = ""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        edit_schedules(
            op, self.kernel, self.name,
            lambda s, info: replace(s, tile=per_loop(self.sizes, info, "tile sizes")),
            self.op,
        )
