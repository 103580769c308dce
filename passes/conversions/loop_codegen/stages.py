"""What one loop nest computes at each point: the kernel's body and the bodies fused with it.

Each stage is a linalg body whose block arguments come from operand accesses, all rewritten into
the main kernel's loop space so one set of loop positions addresses every operand; the running
value (the accumulator, then each epilogue's result) is passed from stage to stage in registers.

Shared: fusion means the same stages on the CPU and on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Block

from passes.analysis.kernel_access import KernelInfo, OperandAccess, analyze_kernel
from passes.conversions.loop_codegen.fusion import Fusion


@dataclass
class Stage:
    """A generic body to evaluate, and where each block argument comes from: an index into the
    kernel's accesses, or None for the running value (accumulator / previous result)."""

    block: Block
    sources: list[int | None]


def compose_access(access: OperandAccess, target: OperandAccess) -> OperandAccess:
    """An access of a generic whose loops are T's coordinates, rewritten in G's loop space.

    T's coordinate e is `target.consts[e] + sum_d target.coefs[e][d] * i_d`, so a linear map of
    T's coordinates stays linear in G's loops.
    """
    num_loops = len(target.coefs[0]) if target.coefs else 0
    coefs = [
        [sum(row[e] * target.coefs[e][d] for e in range(len(row))) for d in range(num_loops)]
        for row in access.coefs
    ]
    consts = [
        const + sum(row[e] * target.consts[e] for e in range(len(row)))
        for row, const in zip(access.coefs, access.consts)
    ]
    out = OperandAccess(
        access.value,
        access.is_output,
        access.shape,
        access.mem_strides,
        access.offset,
        coefs,
        consts,
        runtime_offset=access.runtime_offset,
    )
    out.loop_strides = [
        sum(access.mem_strides[r] * coefs[r][d] for r in range(len(coefs)))
        for d in range(num_loops)
    ]
    return out


@dataclass
class KernelStages:
    """The stages of one loop nest and every operand access they read, in the kernel's loop space.

    `accesses` starts with the kernel's own (inputs, then its output at `output_index`); fused
    stages append theirs. `store_index` is the access the finished value is stored to: the
    kernel's output, or the last epilogue's.
    """

    accesses: list[OperandAccess]
    main: Stage
    prologue: Stage | None
    epilogues: list[Stage]
    output_index: int
    store_index: int

    @staticmethod
    def build(info: KernelInfo, fusion: Fusion | None) -> KernelStages:
        num_own = len(info.accesses)
        stages = KernelStages(
            accesses=list(info.accesses),
            main=Stage(info.op.body.block, [*range(num_own - 1), None]),
            prologue=None,
            epilogues=[],
            output_index=num_own - 1,
            store_index=num_own - 1,
        )
        if fusion is not None:
            stages._add_fusion(fusion, info.output)
        return stages

    def all(self) -> list[Stage]:
        return [self.main, *([self.prologue] if self.prologue is not None else []), *self.epilogues]

    def _add_access(self, access: OperandAccess, target: OperandAccess) -> int:
        self.accesses.append(compose_access(access, target))
        return len(self.accesses) - 1

    def _add_fusion(self, fusion: Fusion, target: OperandAccess) -> None:
        """Bring the prologue/epilogue generics' accesses into this kernel's loop space."""
        if fusion.prologue is not None:
            inputs = analyze_kernel(fusion.prologue).accesses[:-1]
            sources: list[int | None] = [self._add_access(a, target) for a in inputs]
            self.prologue = Stage(fusion.prologue.body.block, [*sources, None])
        for epilogue in fusion.epilogues:
            accesses = analyze_kernel(epilogue).accesses
            sources = []
            for argument, access in enumerate(accesses[:-1]):
                if argument == fusion.chain_input[epilogue]:
                    sources.append(None)  # the running value, never in memory
                else:
                    sources.append(self._add_access(access, target))
            self.epilogues.append(Stage(epilogue.body.block, [*sources, None]))
            self.store_index = self._add_access(accesses[-1], target)
