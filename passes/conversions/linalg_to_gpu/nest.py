"""The loop nest of one kernel on a GPU: the CPU nest with its outer loops mapped to ids.

    block id  -> the block tile of every parallel loop      (was: scf.parallel + tile loops)
      reduction steps (the staging depth), in `order`       (as on the CPU: tile loops)
        [staged operands: cooperative copy, barrier]        (was: packing into a stack panel)
          thread id -> the register tile of every parallel loop   (was: point loops)
            register tile: accumulators, reduction loops, body, fused stages, store (shared)
        [barrier]

With a reduction split (split.py) the thread id is (output group, lane): the group takes the
register tile, the lanes share its reduction.

Everything inside a thread's register tile, and the reduction tiling around it, is shared with
the CPU generator (passes/conversions/loop_codegen/), so fusion and body generation are one code.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from xdsl.dialects import arith, gpu
from xdsl.ir import Operation, SSAValue

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.conversions.linalg_to_gpu.split import SplitRegisterTile
from passes.conversions.linalg_to_gpu.staging import staged_operands
from passes.conversions.loop_codegen.emitter import Pos
from passes.conversions.loop_codegen.fusion import Fusion
from passes.conversions.loop_codegen.panels import PanelMaker
from passes.conversions.loop_codegen.tiled_nest import TiledNestGenerator
from passes.schedule.gpu_rules import GpuMapping


class GpuLoopNestGenerator(TiledNestGenerator):
    """Emits one kernel's nest as the body of a gpu.func (in place of the linalg op)."""

    def __init__(
        self,
        info: KernelInfo,
        schedule: Schedule,
        mapping: GpuMapping,
        buffer: PanelMaker,
        fusion: Fusion | None = None,
    ):
        super().__init__(info, schedule, fusion)
        self.mapping = mapping
        self.buffer = buffer
        self.parallel = [d for d in schedule.order if info.iterators[d] == "parallel"]
        self.thread = self._hoisted(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        group = self.thread
        if schedule.split > 1:  # lanes of one output group are neighbouring threads
            k = self.emitter.index(schedule.split)
            lane = self._hoisted(arith.RemUIOp(self.thread, k))
            group = self._hoisted(arith.DivUIOp(self.thread, k))
            self.register_tile = SplitRegisterTile(
                self.register_tile,
                lane,
                group,
                mapping.block,
                lambda n: buffer(-1, info.output.value.type.element_type, [n]),  # type: ignore[attr-defined]
            )
        self.thread_offsets = self._decompose(
            group, {d: mapping.threads[d] for d in self.parallel}, schedule.unroll
        )

    def _hoisted(self, op: Operation) -> SSAValue:
        self.emitter.hoist(op)
        return op.results[0]

    def _decompose(
        self, linear: SSAValue, counts: dict[int, int], scale: tuple[int, ...]
    ) -> dict[int, SSAValue]:
        """`linear` (a block or thread id) split into one index per loop (the last loop varies
        fastest), each times `scale[d]`: the loop offset that id stands for."""
        emit = self.emitter
        dims = [d for d, c in counts.items() if c > 1]
        offsets: dict[int, SSAValue] = {}
        inner = 1
        for k, d in enumerate(reversed(dims)):
            index = linear
            if inner > 1:
                index = self._hoisted(arith.DivUIOp(index, emit.index(inner)))
            if k < len(dims) - 1:  # the outermost needs no remainder: the id is in range
                index = self._hoisted(arith.RemUIOp(index, emit.index(counts[d])))
            if scale[d] > 1:
                index = self._hoisted(arith.MuliOp(index, emit.index(scale[d])))
            offsets[d] = index
            inner *= counts[d]
        return offsets

    def generate(self) -> None:
        m = self.mapping
        block = self._hoisted(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        block_offsets = self._decompose(
            block, {d: m.blocks[d] for d in self.parallel}, m.block_tile
        )
        start: list[Pos] = [(None, 0)] * self.num_loops
        size = list(self.info.extents)
        for d in self.parallel:
            size[d] = m.block_tile[d]
            if d in block_offsets:
                start[d] = (block_offsets[d], 0)
        with self.emitter.scope():
            self._tile_level(0, start, size, skip=frozenset(self.parallel))
        self.info.op.detach()
        self.info.op.erase()

    def operand_panels(self, start: list[Pos], size: list[int]) -> AbstractContextManager[None]:
        if not self.schedule.pack:
            return nullcontext()
        return staged_operands(
            self.emitter,
            self.io,
            self.schedule.pack,
            start,
            size,
            self.thread,
            self.mapping.block,
            self.buffer,
        )

    def _point_level(self, depth: int, start: list[Pos], size: list[int]) -> None:
        """This thread's register tile (instead of point loops over the block tile)."""
        start, size = list(start), list(size)
        for d in self.parallel:
            size[d] = self.schedule.unroll[d]
            if d in self.thread_offsets:
                start[d] = (self._thread_start(start[d], d), 0)
        self.register_tile.emit(start, size, self.phase)

    def _thread_start(self, block_start: Pos, d: int) -> SSAValue:
        """The block's start plus this thread's offset along parallel loop d (computed once, at
        the top of the kernel: parallel loops are never tiled inside it)."""
        offset = self.thread_offsets[d]
        ssa, const = block_start
        assert const == 0, "a parallel loop's block start is an id times the block tile"
        if ssa is None:
            return offset
        key = ("thread-start", d)
        if key not in self.emitter.hoisted:
            self.emitter.hoisted[key] = self._hoisted(arith.AddiOp(ssa, offset))
        return self.emitter.hoisted[key]
