"""A register tile whose reduction several threads share (the `split` knob; see
passes/schedule/reduction_split.py for when it applies).

    each of the k lanes of an output group: accumulators = identity
      reduction loops, the split loop stepping by k from this lane's offset   (register_tile.py)
      partials[(group * P + p) * k + lane] = accumulator p
    barrier
    tree: for s = k/2 (rounded up to a power of two) .. 2:
      lane < min(s, k - s): partials[.. + lane] = combine(partials[.. + lane], partials[.. + lane + s])
      barrier
    lane 0: total = combine(partials[.. + 0], partials[.. + 1]); combine the initial value
            (prologue or output) with it, fused epilogues, store
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.ir import Block, Region, SSAValue

from passes.conversions.loop_codegen.emitter import Pos, replaced
from passes.conversions.loop_codegen.register_tile import (
    ReductionPhase,
    RegisterTile,
    TilePoint,
)
from passes.schedule.reduction_split import Combiner, combiner, split_loop

PartialsBuffer = Callable[[int], SSAValue]
"""The workgroup buffer of partial results, given its element count."""


class SplitRegisterTile(RegisterTile):
    """A register tile run by `split` lanes, combined through workgroup memory."""

    def __init__(
        self,
        base: RegisterTile,
        lane: SSAValue,
        group: SSAValue,
        block_threads: int,
        partials: PartialsBuffer,
    ):
        super().__init__(base.info, base.schedule, base.stages, base.emitter, base.io, base.body)
        found = combiner(base.info.op.body.block)
        assert found is not None, "check_split admits only reductions with a combiner"
        self.combiner: Combiner = found
        self.split = base.schedule.split
        self.loop = split_loop(base.schedule, base.info)
        self.strides = {self.loop: self.split}
        self.lane = lane
        self.group = group
        self.block_threads = block_threads
        self.partials = partials

    def emit(self, start: list[Pos], size: list[int], phase: ReductionPhase) -> None:
        assert phase.first and phase.last, "a split reduction is never tiled (check_split)"
        emit, k, d = self.emitter, self.split, self.loop
        points = self.points(start, size)
        reductions = [r for r in self.schedule.order if self.info.iterators[r] == "reduction"]
        ssa, offset = start[d]
        assert ssa is None, "a split loop starts at a constant"
        mine = replaced(start, d, (self.lane, offset))
        identity = emit.constant(self.combiner.identity, self.combiner.type)
        accs = self._reduce(
            reductions, 0, mine, replaced(size, d, size[d] // k), points, [identity] * len(points)
        )
        buffer = self.partials(self.block_threads * len(points))
        # this lane's slot of accumulator p: base + p * k
        group_base = emit.insert(arith.MuliOp(self.group, emit.index(len(points) * k))).result
        base = emit.insert(arith.AddiOp(group_base, self.lane)).result

        def slot(p: int, plus: int = 0) -> SSAValue:
            if p * k + plus == 0:
                return base
            return emit.insert(arith.AddiOp(base, emit.index(p * k + plus))).result

        for p, acc in enumerate(accs):
            emit.insert(memref.StoreOp.get(acc, buffer, [slot(p)]))
        emit.insert(gpu.BarrierOp())
        s = 1
        while s < k:
            s *= 2
        s //= 2
        while s >= 2:

            def step(s: int = s) -> None:
                for p in range(len(points)):
                    here = slot(p)
                    a = emit.insert(memref.LoadOp.get(buffer, [here])).res
                    b = emit.insert(memref.LoadOp.get(buffer, [slot(p, s)])).res
                    emit.insert(memref.StoreOp.get(self._combine(a, b), buffer, [here]))

            self._if_lane_below(min(s, k - s), step)
            emit.insert(gpu.BarrierOp())
            s //= 2
        self._if_lane_below(1, lambda: self._finish(points, buffer, slot))

    def _finish(
        self, points: list[TilePoint], buffer: SSAValue, slot: Callable[[int, int], SSAValue]
    ) -> None:
        """Lane 0: the last tree step (lanes 0 and 1, no barrier: lane 0 alone reads it), the
        initial value combined with the total, the epilogues, the store."""
        stages, emit = self.stages, self.emitter
        for p, (pos, width) in enumerate(points):
            first = emit.insert(memref.LoadOp.get(buffer, [slot(p, 0)])).res
            second = emit.insert(memref.LoadOp.get(buffer, [slot(p, 1)])).res
            total = self._combine(first, second)
            if stages.prologue is not None:
                init = self.body.emit(stages.prologue, pos, width, None)
            else:
                init = self.io.load(stages.output_index, pos, width)
            acc = self._combine(init, total)
            for stage in stages.epilogues:
                acc = self.body.emit(stage, pos, width, acc)
            self.io.store(acc, stages.store_index, pos, width)

    def _combine(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emitter.insert(self.combiner.combine(a, b)).results[0]

    def _if_lane_below(self, bound: int, then: Callable[[], None]) -> None:
        """`then` built inside `scf.if lane < bound` (barriers stay outside: every thread of the
        block must reach them)."""
        emit = self.emitter
        cond = emit.insert(arith.CmpiOp(self.lane, emit.index(bound), "ult")).result
        block = Block()
        emit.insert(scf.IfOp(cond, [], Region(block)))
        with emit.inside(block):
            then()
            emit.insert(scf.YieldOp())
