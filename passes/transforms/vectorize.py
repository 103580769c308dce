"""`vectorize{dim=D width=W}`: run loop D as vector lanes of width W (dim=-1: scalar code).

The register tile of the vector loop is rounded up to a multiple of the width; `width` is
a power of two in 1..MAX_WIDTH lanes (omitted: the host CPU's widest).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.schedule.attached import edit_schedules
from passes.schedule.knobs import set_vector
from passes.schedule.options import check_width_option, option_error


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    name = "vectorize"

    dim: int = -1
    """The loop whose iterations become vector lanes (-1: scalar code)."""
    width: int | None = None
    """f32 lanes; omitted: the host CPU's widest."""
    kernel: str = ""
    """Only the linalg.generic ops of `func.func @kernel` (empty: every function)."""
    op: int = -1
    """Only the op-th linalg.generic of each targeted function (-1: all of them)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dim < -1:
            raise option_error(
                self.name, "dim", self.dim, "-1 (scalar code) or a loop of the kernel (0, 1, ...)"
            )
        check_width_option(self.name, self.width)
        edit_schedules(
            op,
            self.kernel,
            self.name,
            lambda s, info: set_vector(s, info, self.dim, self.width or 0),
            self.op,
        )
