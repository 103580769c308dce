"""`split-reduction{threads=K}`: K GPU threads share each output's reduction.

The GPU knob for small outputs with long reductions (passes/schedule/reduction_split.py says
how it runs and when it is sound): the innermost reduction loop of the order is dealt out among
K threads and their partial results are combined in workgroup memory. threads=1 turns it off.
A split reduction is scalar and unstaged, so the pass resets `vector`, `pack` and the reduction
tiles; the CPU lowering rejects a split (there, one thread runs each output's reduction).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_split
from passes.schedule.options import MAX_OPTION, option_error


@dataclass(frozen=True)
class SplitReductionPass(ModulePass):
    name = "split-reduction"

    threads: int = 1
    """Threads per output's reduction (1: not split)."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 1 <= self.threads <= MAX_OPTION:
            raise option_error(self.name, "threads", self.threads, "a thread count (1, 2, ...)")
        edit_schedules(
            op, self.kernel, self.name, lambda s, info: set_split(s, info, self.threads), self.op
        )
