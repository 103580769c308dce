"""The register tile (unroll-and-jam): the micro-kernel at the bottom of every loop nest.

A tile of the parallel loops holds one accumulator per (position, vector chunk). The
accumulators are loaded (or computed by a fused prologue) once, carried through the reduction
loops as scf.for iter_args, the body replicated per position at every reduction step (unrolled by
the schedule's factor), and stored once, after the fused epilogues, so the inner loop of a
matmul or convolution is loads, broadcasts and FMAs on registers. When the vector loop is the
innermost reduction loop (a softmax or LayerNorm row), each position instead carries vector
partial results along it beside its scalar accumulator, folded into it after the loops.

Shared: on the CPU the point loops step over register tiles; on the GPU each thread runs one
(linalg_to_gpu/split.py extends it for a reduction several threads share).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.conversions.loop_codegen.body import BodyEmitter
from passes.conversions.loop_codegen.emitter import Emitter, Pos, replaced, shifted
from passes.conversions.loop_codegen.operand_io import OperandIO
from passes.conversions.loop_codegen.stages import KernelStages
from passes.schedule.reduction_split import Combiner, combiner, float_combining_kind
from passes.schedule.rules import reduces_in_vectors

TilePoint = tuple[list[Pos], int]
"""One accumulator of the register tile: its loop positions and its vector width."""


@dataclass(frozen=True)
class ReductionPhase:
    """Where the register tile sits among the cache tiles of a fused kernel's reduction loop.

    Only the first tile starts from the prologue's value (later ones reload the partial sums from
    the output buffer), and only the last applies the epilogues (earlier ones store partial sums).
    """

    first: bool = True
    last: bool = True


@dataclass(eq=False)
class RegisterTile:
    """Emits the register tile at a point of the parallel loops."""

    info: KernelInfo
    schedule: Schedule
    stages: KernelStages
    emitter: Emitter
    io: OperandIO
    body: BodyEmitter
    strides: dict[int, int] = field(init=False, default_factory=dict)
    """Per reduction loop: the step between the iterations this tile runs (1 unless a GPU
    reduction split deals the loop out among threads)."""

    def __post_init__(self) -> None:
        self.vector_loop = self.schedule.vector
        self.vector_width = self.schedule.width if self.schedule.vector >= 0 else 1
        self.lane_partials: Combiner | None = None
        """The combiner of a kernel vectorized along its innermost reduction loop."""
        if reduces_in_vectors(self.schedule, self.info):
            self.lane_partials = combiner(self.info.op.body.block)
            assert self.lane_partials is not None, "check_vector_loop admits no such schedule"

    def points(self, start: list[Pos], size: list[int]) -> list[TilePoint]:
        """One accumulator per parallel position of the tile, `vector_width` lanes along the
        vector loop (a narrower last chunk when the tile is not a multiple of it)."""
        per_loop: list[list[tuple[int, int]]] = []  # (offset, width) of each chunk of each loop
        for d in range(self.info.num_loops):
            if self.info.iterators[d] != "parallel":
                per_loop.append([(0, 1)])
            elif d == self.vector_loop:
                width = self.vector_width
                per_loop.append([(o, min(width, size[d] - o)) for o in range(0, size[d], width)])
            else:
                per_loop.append([(o, 1) for o in range(size[d])])
        out = []
        for combo in itertools.product(*per_loop):
            pos = [shifted(start[d], combo[d][0]) for d in range(self.info.num_loops)]
            width = combo[self.vector_loop][1] if self.vector_loop >= 0 else 1
            out.append((pos, width))
        return out

    def emit(self, start: list[Pos], size: list[int], phase: ReductionPhase) -> None:
        """The tile at (start, size): accumulate over the reduction loops, then store."""
        points = self.points(start, size)
        reductions = [d for d in self.schedule.order if self.info.iterators[d] == "reduction"]
        stages = self.stages
        if not reductions:
            for pos, width in points:
                self.io.store(
                    self.body.emit(stages.main, pos, width, None), stages.store_index, pos, width
                )
            return
        partial = stages.output_index  # the reduction's own output buffer
        if stages.prologue is not None and phase.first:  # the initial value, in registers
            accs = [self.body.emit(stages.prologue, pos, width, None) for pos, width in points]
        else:
            accs = [self.io.load(partial, pos, width) for pos, width in points]
        if self.lane_partials is not None:
            accs = self._reduce_in_vectors(reductions, start, size, points, accs)
        else:
            accs = self._reduce(reductions, 0, start, size, points, accs)
        for (pos, width), acc in zip(points, accs):
            if not phase.last:  # a partial sum: back to the output buffer
                self.io.store(acc, partial, pos, width)
                continue
            for stage in stages.epilogues:  # applied to the finished accumulator, in registers
                acc = self.body.emit(stage, pos, width, acc)
            self.io.store(acc, stages.store_index, pos, width)

    def _leaf(
        self, start: list[Pos], points: list[TilePoint], width: int, accs: list[SSAValue]
    ) -> list[SSAValue]:
        """The body at every point of the tile, at reduction position `start`."""
        new = []
        for (pos, point_width), acc in zip(points, accs, strict=True):
            at = [
                start[d] if self.info.iterators[d] == "reduction" else pos[d]
                for d in range(self.info.num_loops)
            ]
            new.append(self.body.emit(self.stages.main, at, max(width, point_width), acc))
        return new

    def _reduce_in_vectors(
        self,
        reductions: list[int],
        start: list[Pos],
        size: list[int],
        points: list[TilePoint],
        accs: list[SSAValue],
    ) -> list[SSAValue]:
        """The reductions of a kernel whose vector loop is its innermost reduction loop: each
        point keeps `unroll / width` vector partials (independent chains of the combining op)
        from the combiner's identity beside its scalar accumulator, which takes the loop's
        last `size % width` steps; after the loops the partials are combined lane-wise, then
        across lanes (vector.reduction) into the scalar."""
        c = self.lane_partials
        assert c is not None
        kind = float_combining_kind(c)
        assert kind is not None
        w = self.vector_width
        chains = max(1, self.schedule.unroll[self.vector_loop] // w)
        identity = self.emitter.constant(c.identity, VectorType(c.type, [w]))
        carried = [*accs, *[identity] * (len(points) * chains)]
        carried = self._reduce(reductions, 0, start, size, points, carried, chains)
        scalars, partials = carried[: len(points)], carried[len(points) :]
        out: list[SSAValue] = []
        for i, scalar in enumerate(scalars):
            lanes = partials[i * chains]
            for j in range(1, chains):
                lanes = self.emitter.insert(c.combine(lanes, partials[i * chains + j])).results[0]
            # xDSL 0.74's ReductionOp.__init__ types its result as the vector: create() instead
            red = vector.ReductionOp.create(
                operands=[lanes, scalar],
                result_types=[c.type],
                properties={"kind": vector.CombiningKindAttr(kind)},
            )
            out.append(self.emitter.insert(red).results[0])
        return out

    def _vector_level(
        self,
        d: int,
        start: list[Pos],
        size: list[int],
        points: list[TilePoint],
        carried: list[SSAValue],
        chains: int,
    ) -> list[SSAValue]:
        """The vector loop d (a reduction): blocks of `chains` vectors in an scf.for, each
        vector into its own partial; the remaining whole vectors into the first partial, the
        last steps scalar into the points' accumulators."""
        w = self.vector_width
        n = len(points)
        step = chains * w

        def chunks(first: list[Pos], count: int, partials: list[SSAValue]) -> list[SSAValue]:
            new = list(partials)
            for j in range(count):
                at = replaced(first, d, shifted(first[d], j * w))
                picked = [new[i * chains + (j % chains)] for i in range(n)]
                for i, acc in enumerate(self._leaf(at, points, w, picked)):
                    new[i * chains + (j % chains)] = acc
            return new

        scalars, partials = carried[:n], carried[n:]
        num_full, rest = divmod(size[d], step)
        if num_full == 1:
            partials = chunks(start, chains, partials)
        elif num_full > 1:
            lower = self.emitter.position(start[d])
            upper = self.emitter.position(shifted(start[d], num_full * step))
            partials = self.emitter.for_loop(
                lower,
                upper,
                step,
                partials,
                lambda iv, a: chunks(replaced(start, d, (iv, 0)), chains, a),
            )
        done = num_full * step
        partials = chunks(replaced(start, d, shifted(start[d], done)), rest // w, partials)
        for offset in range(done + rest // w * w, size[d]):
            scalars = self._leaf(replaced(start, d, shifted(start[d], offset)), points, 1, scalars)
        return [*scalars, *partials]

    def _reduce(
        self,
        reductions: list[int],
        level: int,
        start: list[Pos],
        size: list[int],
        points: list[TilePoint],
        accs: list[SSAValue],
        chains: int = 0,
    ) -> list[SSAValue]:
        """Reduction loop `reductions[level]` and those inside it, on the accumulators: full
        blocks of the unroll factor in an scf.for carrying them, the remainder peeled. With
        `chains`, the accumulators are followed by that many vector partials per point and
        the innermost loop is the vector loop (_reduce_in_vectors)."""
        if level == len(reductions):
            return self._leaf(start, points, 1, accs)
        d = reductions[level]
        if chains and d == self.vector_loop:
            return self._vector_level(d, start, size, points, accs, chains)
        stride = self.strides.get(d, 1)
        unroll = max(1, min(self.schedule.unroll[d], size[d]))
        num_full, remainder = divmod(size[d], unroll)
        one = replaced(size, d, 1)

        def unrolled(first: list[Pos], accs_in: list[SSAValue]) -> list[SSAValue]:
            current = accs_in
            for offset in range(unroll):
                at = replaced(first, d, shifted(first[d], offset * stride))
                current = self._reduce(reductions, level + 1, at, one, points, current, chains)
            return current

        if num_full == 1:
            accs = unrolled(start, accs)
        elif num_full > 1:
            lower = self.emitter.position(start[d])
            upper = self.emitter.position(shifted(start[d], num_full * unroll * stride))
            accs = self.emitter.for_loop(
                lower,
                upper,
                unroll * stride,
                accs,
                lambda iv, a: unrolled(replaced(start, d, (iv, 0)), a),
            )
        for offset in range(remainder):
            at = replaced(start, d, shifted(start[d], (num_full * unroll + offset) * stride))
            accs = self._reduce(reductions, level + 1, at, one, points, accs, chains)
        return accs
