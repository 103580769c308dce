"""The loop nest of one kernel below its outermost loops: cache tiles, point loops, register tile.

      tile loops (cache level, in `order`; partial last tiles peeled statically)
        [operand panels]
          point loops over parallel dims (step = register tile; remainders peeled statically)
            register tile (register_tile.py)

Every shape is static, so peeling produces static trip counts and no masks.

Shared: the CPU nest (linalg_to_loops/loop_nest.py) runs the tiles of its first loops on threads
(scf.parallel) and packs operands into stack panels; the GPU kernel (linalg_to_gpu/nest.py) maps
its parallel loops to block and thread ids and stages operands in workgroup memory. Both place
those in the hooks of TiledNestGenerator and share everything else: the reduction tiles (with
fused stages, partial sums between them), the point loops, the register tile.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from xdsl.ir import SSAValue

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.conversions.loop_codegen.body import BodyEmitter
from passes.conversions.loop_codegen.emitter import Emitter, Pos, replaced, shifted
from passes.conversions.loop_codegen.fusion import Fusion
from passes.conversions.loop_codegen.operand_io import OperandIO
from passes.conversions.loop_codegen.register_tile import ReductionPhase, RegisterTile
from passes.conversions.loop_codegen.stages import KernelStages

Inner = Callable[[list[Pos], list[int]], None]
"""Generates what lies inside one loop level, for a block at (start, size)."""


class TiledNestGenerator(ABC):
    """Emits the loop nest of one kernel in place of the linalg op.

    A lowering supplies `generate` (the outermost loops, then `_tile_level` inside them) and
    `operand_panels` (around the point loops of each innermost cache tile); it may replace
    `_point_level` (a GPU thread runs one register tile instead of point loops) and
    `register_tile`.
    """

    def __init__(self, info: KernelInfo, schedule: Schedule, fusion: Fusion | None = None):
        self.info = info
        self.schedule = schedule
        self.num_loops = info.num_loops
        self.stages = KernelStages.build(info, fusion)
        self.emitter = Emitter(info.op)
        written = {self.stages.accesses[self.stages.store_index].value, info.output.value}
        vector_width = schedule.width if schedule.vector >= 0 else 1
        self.io = OperandIO(
            self.emitter,
            self.stages.accesses,
            written,
            self.num_loops,
            schedule.vector,
            vector_width,
        )
        body = BodyEmitter(self.emitter, self.io, self.stages)
        self.register_tile = RegisterTile(info, schedule, self.stages, self.emitter, self.io, body)
        self.phase = ReductionPhase()

    @abstractmethod
    def generate(self) -> None:
        """Emit the whole nest before the kernel op, then erase the op."""

    # --------------------------------------------------------------- cache tiles
    def _tile_level(
        self, depth: int, start: list[Pos], size: list[int], skip: frozenset[int] = frozenset()
    ) -> None:
        """The tile loop of the `depth`-th loop in the order, and everything inside it; `skip`: the
        loops already tiled by the outermost loops (CPU threads, GPU block ids)."""
        if depth == self.num_loops:
            with self.operand_panels(start, size):
                self._point_level(0, start, size)
            return
        d = self.schedule.order[depth]
        tile = self.schedule.tile[d]
        if tile == 0 or tile >= size[d] or d in skip:
            self._tile_level(depth + 1, start, size, skip)
            return

        def inner(tile_start: list[Pos], tile_size: list[int]) -> None:
            self._tile_level(depth + 1, tile_start, tile_size, skip)

        stages = self.stages
        fused = stages.prologue is not None or bool(stages.epilogues)
        if self.info.iterators[d] == "reduction" and fused:
            self._split_reduction(d, tile, start, size, inner)
        else:
            self._split(d, tile, start, size, inner)

    @abstractmethod
    def operand_panels(self, start: list[Pos], size: list[int]) -> AbstractContextManager[None]:
        """Around the point loops of one innermost cache tile: the panels of the operands the
        schedule packs (panels.py), or nothing."""

    @contextmanager
    def _in_phase(self, first: bool, last: bool) -> Iterator[None]:
        saved = self.phase
        self.phase = ReductionPhase(first, last)
        try:
            yield
        finally:
            self.phase = saved

    def _split_reduction(
        self, d: int, step: int, start: list[Pos], size: list[int], inner: Inner
    ) -> None:
        """Reduction tiles with fused epilogues: every tile but the last carries partial sums
        through the output buffer; the last applies the epilogues before the final store."""
        num_full, remainder = divmod(size[d], step)
        pieces = [(o, step) for o in range(0, num_full * step, step)]
        if remainder:
            pieces.append((num_full * step, remainder))
        last, before = pieces[-1], pieces[:-1]
        base = start[d]
        with self._in_phase(first=self.stages.prologue is not None, last=False):
            if len(before) == 1:
                inner(replaced(start, d, shifted(base, before[0][0])), replaced(size, d, step))
            elif before:  # all full tiles: one loop
                assert self.stages.prologue is None, "a fused prologue needs the first tile peeled"
                lower = self.emitter.position(base)
                upper = self.emitter.position(shifted(base, before[-1][0] + step))

                def body(iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                    inner(replaced(start, d, (iv, 0)), replaced(size, d, step))
                    return []

                self.emitter.for_loop(lower, upper, step, [], body)
        with self._in_phase(first=len(pieces) == 1, last=True):
            inner(replaced(start, d, shifted(base, last[0])), replaced(size, d, last[1]))

    def _split(self, d: int, step: int, start: list[Pos], size: list[int], inner: Inner) -> None:
        """Full blocks of `step` along loop d in an scf.for, then the remainder block peeled."""
        num_full, remainder = divmod(size[d], step)
        if num_full == 1:
            inner(start, replaced(size, d, step))
        elif num_full > 1:
            lower = self.emitter.position(start[d])
            upper = self.emitter.position(shifted(start[d], num_full * step))

            def body(iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                inner(replaced(start, d, (iv, 0)), replaced(size, d, step))
                return []

            self.emitter.for_loop(lower, upper, step, [], body)
        if remainder:
            inner(
                replaced(start, d, shifted(start[d], num_full * step)), replaced(size, d, remainder)
            )

    # -------------------------------------------------------------- point loops
    def _point_level(self, depth: int, start: list[Pos], size: list[int]) -> None:
        """The point loop of the `depth`-th parallel loop in the order, stepping by its register tile."""
        parallel = [d for d in self.schedule.order if self.info.iterators[d] == "parallel"]
        if depth == len(parallel):
            self.register_tile.emit(start, size, self.phase)
            return
        d = parallel[depth]
        unroll = min(self.schedule.unroll[d], size[d])

        def inner(tile_start: list[Pos], tile_size: list[int]) -> None:
            self._point_level(depth + 1, tile_start, tile_size)

        self._split(d, unroll, start, size, inner)
