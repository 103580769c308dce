"""A linalg body inlined at one register-tile position, on `width`-lane values.

Each op of the body is re-created on the loaded (or running) values, widened to vectors when any
operand varies along the vector loop; `addf(x, mulf(a, b))` becomes one fma, which is what the
broadcast-load-FMA inner loop of a matmul or convolution is made of.

Shared: a GPU thread's register tile evaluates the same bodies (as floatN vectors, or scalars).
"""

from __future__ import annotations

from xdsl.dialects import arith, vector
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, VectorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from passes.conversions.loop_codegen.emitter import Emitter, Pos
from passes.conversions.loop_codegen.operand_io import OperandIO
from passes.conversions.loop_codegen.stages import KernelStages, Stage


def fma_multiplies(block: Block) -> set[Operation]:
    """The mulf ops to fold into an fma: single-use operands of an addf."""
    fused: set[Operation] = set()
    for op in block.ops:
        if isinstance(op, arith.AddfOp):
            for operand in (op.lhs, op.rhs):
                owner = operand.owner
                if isinstance(owner, arith.MulfOp) and owner.result.has_one_use():
                    fused.add(owner)
                    break
    return fused


class BodyEmitter:
    """Emits the stages' bodies; operands come from OperandIO, constants are hoisted."""

    def __init__(self, emitter: Emitter, io: OperandIO, stages: KernelStages):
        self.emitter = emitter
        self.io = io
        self.stages = stages
        self.fused_multiplies: set[Operation] = set()
        for stage in stages.all():
            self.fused_multiplies |= fma_multiplies(stage.block)

    def emit(self, stage: Stage, pos: list[Pos], width: int, running: SSAValue | None) -> SSAValue:
        """Emit one stage's body at `pos`; `running` feeds the argument that reads the running
        value (the accumulator, or the previous stage's result); other arguments are loaded."""
        block = stage.block
        env: dict[SSAValue, SSAValue] = {}
        for arg, source in zip(block.args, stage.sources):
            if not arg.uses:
                continue
            if source is None:
                if running is None:
                    running_value = self.io.load(self.stages.store_index, pos, width)
                else:
                    running_value = running
                env[arg] = running_value
            else:
                env[arg] = self.io.load(source, pos, width)
        for op in block.ops:
            if isinstance(op, linalg.YieldOp):
                return env[op.operands[0]]
            if op in self.fused_multiplies:
                continue
            if isinstance(op, linalg.IndexOp):
                env[op.result] = self.emitter.position(pos[op.dim.value.data])
            elif isinstance(op, arith.ConstantOp):
                env[op.result] = self._constant(op)
            elif isinstance(op, arith.AddfOp) and self._fma_parts(op) is not None:
                env[op.result] = self._fma(op, env, width)
            else:
                self._elementwise(op, env, width)
        raise DiagnosticException("linalg.generic body has no linalg.yield")

    def _fma_parts(self, add: arith.AddfOp) -> tuple[arith.MulfOp, SSAValue] | None:
        """(the folded mulf, the addend) when `add` absorbs a multiply."""
        for operand, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if isinstance(operand.owner, arith.MulfOp) and operand.owner in self.fused_multiplies:
                return operand.owner, other
        return None

    def _fma(self, add: arith.AddfOp, env: dict[SSAValue, SSAValue], width: int) -> SSAValue:
        parts = self._fma_parts(add)
        assert parts is not None
        mul, addend = parts
        lhs = self.io.splat(env[mul.lhs], width)
        rhs = self.io.splat(env[mul.rhs], width)
        acc = self.io.splat(env[addend], width)
        if width > 1:
            return self.emitter.insert(vector.FMAOp(lhs, rhs, acc)).res
        return self.emitter.insert(xmath.FmaOp(lhs, rhs, acc)).result

    def _elementwise(self, op: Operation, env: dict[SSAValue, SSAValue], width: int) -> None:
        """Re-create op on the current values: on vectors when any operand is one."""
        operands = [env.get(x, x) for x in op.operands]
        vec = width > 1 and any(isinstance(x.type, VectorType) for x in operands)
        if vec:
            # a scalar select condition picks whole vectors: keep it scalar
            keep = {0} if isinstance(op, arith.SelectOp) else set()
            operands = [x if k in keep else self.io.splat(x, width) for k, x in enumerate(operands)]
        result_types = [VectorType(r.type, [width]) if vec else r.type for r in op.results]
        new = op.__class__.create(
            operands=operands,
            result_types=result_types,
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        self.emitter.insert(new)
        for old, res in zip(op.results, new.results):
            env[old] = res

    def _constant(self, op: arith.ConstantOp) -> SSAValue:
        """A body constant, hoisted and shared with the generator's own constants."""
        value = op.value
        if isinstance(value, FloatAttr | IntegerAttr):
            return self.emitter.constant(value.value.data, op.result.type)
        clone = op.clone()
        self.emitter.hoist(clone)
        return clone.result
