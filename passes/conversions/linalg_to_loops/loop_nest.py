"""The CPU loop nest of one kernel: threads, cache tiles, point loops, register tile.

    scf.parallel over the full cache tiles of the first `parallel` loops of the order
      tile loops (cache level, in `order`; partial last tiles peeled statically)
        [operands packed into panels]
          point loops over parallel dims (step = register tile; remainders peeled statically)
            register tile (loop_codegen/register_tile.py)

Every shape is static, so peeling produces static trip counts and no masks. What lies below the
threads is loop_codegen/tiled_nest.py, shared with the GPU lowering; the threads and the packing
(packing.py) are the CPU's own.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region

from passes.conversions.linalg_to_loops.packing import packed_operands
from passes.conversions.loop_codegen.emitter import Pos, replaced
from passes.conversions.loop_codegen.tiled_nest import TiledNestGenerator


class LoopNestGenerator(TiledNestGenerator):
    """Emits one kernel's CPU loop nest in place of the linalg op: the tiles of its first loops
    on threads (scf.parallel), packed operands in stack panels."""

    def generate(self) -> None:
        """Emit the whole nest before the kernel op, then erase the op."""
        with self.emitter.scope():
            start: list[Pos] = [(None, 0)] * self.num_loops
            self._parallel_tiles(start, list(self.info.extents))
        self.info.op.detach()
        self.info.op.erase()

    # ------------------------------------------------------------------ threads
    def parallel_dims(self, size: list[int]) -> list[int]:
        """The loops whose cache tiles run across threads: the tiled ones among the first
        `parallel` loops of the order, up to the first whose tile leaves a remainder (a peeled
        remainder tile is different code, so it cannot share the collapsed parallel space)."""
        dims = []
        for d in self.schedule.order[: self.schedule.parallel]:
            tile = self.schedule.tile[d]
            if tile == 0 or tile >= size[d]:
                continue  # no tile loop: every thread covers the whole extent
            if size[d] % tile:
                break
            dims.append(d)
        return dims

    def _parallel_tiles(self, start: list[Pos], size: list[int]) -> None:
        """The full cache tiles of the parallel loops as one scf.parallel, the rest inside it."""
        dims = self.parallel_dims(size)
        if not dims:
            self._tile_level(0, start, size)
            return
        emit = self.emitter
        tiles = self.schedule.tile
        block = Block(arg_types=[IndexType()] * len(dims))
        loop = scf.ParallelOp(
            [emit.index(0)] * len(dims),
            [emit.index(size[d]) for d in dims],
            [emit.index(tiles[d]) for d in dims],
            Region(block),
        )
        emit.insert(loop)
        with emit.inside(block):
            for d, iv in zip(dims, block.args):
                start = replaced(start, d, (iv, 0))
                size = replaced(size, d, tiles[d])
            self._tile_level(0, start, size, skip=frozenset(dims))
            emit.insert(scf.ReduceOp())

    def operand_panels(self, start: list[Pos], size: list[int]) -> AbstractContextManager[None]:
        """Around the point loops of one innermost cache tile: the packed operands' panels."""
        if not self.schedule.pack:
            return nullcontext()
        return packed_operands(self.emitter, self.io, self.schedule.pack, start, size)
