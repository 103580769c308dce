"""Reduction split: several GPU threads share one output's reduction (the `split` knob).

A small output with a long reduction (global pooling, a softmax or layer-norm row, a batch-1
classifier) gives too few threads to fill a GPU when each output is one thread's loop. With
`split = k`, k threads work on every output: the innermost reduction loop of the schedule's
order is dealt out among them interleaved (thread r takes iterations r, r + k, ..., so
neighbouring threads read neighbouring addresses when that loop is contiguous), each starting
from the combiner's identity; the k partial results are combined in workgroup memory by a tree
(log2 k steps between barriers), and the first thread folds in the initial value, applies the
fused epilogues and stores. That is only sound when the body is `out = combine(out, f(inputs))`
with an associative, commutative `combine` whose identity is known: combiner() finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import AnyFloat, IntegerType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, SSAValue

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo

_FLOAT_IDENTITY: dict[type[Operation], float] = {
    arith.AddfOp: 0.0,
    arith.MulfOp: 1.0,
    arith.MaximumfOp: float("-inf"),
    arith.MaxnumfOp: float("-inf"),
    arith.MinimumfOp: float("inf"),
    arith.MinnumfOp: float("inf"),
}


def _int_identity(op: type[Operation], width: int) -> int | None:
    top = (1 << (width - 1)) - 1
    return {
        arith.AddiOp: 0,
        arith.MuliOp: 1,
        arith.OrIOp: 0,
        arith.XOrIOp: 0,
        arith.AndIOp: -1,
        arith.MaxSIOp: -top - 1,
        arith.MinSIOp: top,
        arith.MaxUIOp: 0,
        arith.MinUIOp: -1,
    }.get(op)


@dataclass(frozen=True)
class Combiner:
    """How partial results of one output combine: `op(a, b)`, starting from `identity`."""

    op: Operation
    """The body's combining op."""
    identity: int | float
    type: Attribute

    def combine(self, a: SSAValue, b: SSAValue) -> Operation:
        """The op combining two partials (scalars, or vectors lane by lane), not yet inserted."""
        return self.op.__class__.create(
            operands=[a, b],
            result_types=[a.type],
            properties=dict(self.op.properties),
            attributes=dict(self.op.attributes),
        )


def combiner(block: Block) -> Combiner | None:
    """The combiner of a reduction body `out = op(out, value)` (value not reading out), or None
    when the body has another shape (several outputs, out used twice, an unknown op)."""
    out = block.args[-1]
    yield_op = block.last_op
    if not isinstance(yield_op, linalg.YieldOp) or len(yield_op.operands) != 1:
        return None
    op = yield_op.operands[0].owner
    if not isinstance(op, Operation) or len(op.operands) != 2 or out not in op.operands:
        return None
    if not out.has_one_use() or op.operands[0] is op.operands[1]:
        return None
    typ = out.type
    if isinstance(typ, IntegerType):
        identity: int | float | None = _int_identity(type(op), typ.width.data)
    elif isinstance(typ, AnyFloat):
        identity = _FLOAT_IDENTITY.get(type(op))
    else:
        identity = None
    if identity is None:
        return None
    return Combiner(op, identity, typ)


_FLOAT_KINDS: dict[type[Operation], vector.CombiningKindFlag] = {
    arith.AddfOp: vector.CombiningKindFlag.ADD,
    arith.MulfOp: vector.CombiningKindFlag.MUL,
    arith.MaximumfOp: vector.CombiningKindFlag.MAXIMUMF,
    arith.MaxnumfOp: vector.CombiningKindFlag.MAXNUMF,
    arith.MinimumfOp: vector.CombiningKindFlag.MINIMUMF,
    arith.MinnumfOp: vector.CombiningKindFlag.MINNUMF,
}


def float_combining_kind(c: Combiner) -> vector.CombiningKindFlag | None:
    """The vector.reduction kind that folds the lanes of a float combiner's partials (None for
    an integer combiner: the CPU lowering reduces float vectors only)."""
    return _FLOAT_KINDS.get(type(c.op)) if isinstance(c.type, AnyFloat) else None


def split_loop(s: Schedule, info: KernelInfo) -> int:
    """The loop a split divides among threads: the innermost reduction loop of the order."""
    reductions = [d for d in s.order if info.iterators[d] == "reduction"]
    return reductions[-1] if reductions else -1


def check_split(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless `s.split` threads can share each output's reduction."""
    if s.split == 1:
        return
    d = split_loop(s, info)
    if d < 0:
        raise ValueError(f"split = {s.split}: the kernel has no reduction loop to split")
    if len(info.op.outputs) != 1 or combiner(info.op.body.block) is None:
        raise ValueError(
            f"split = {s.split}: the reduction is not out = combine(out, value) with a known "
            "identity (add, mul, max, min, and, or, xor), so partial results cannot be combined"
        )
    extent = info.extents[d]
    if extent % s.split:
        raise ValueError(
            f"split = {s.split} does not divide loop {d} (the innermost reduction loop of the "
            f"order, {extent} iterations)"
        )
    if s.vector >= 0:
        raise ValueError(f"split = {s.split}: a split reduction is scalar (vector = -1)")
    for r in info.reduction_loops:
        if 0 < s.tile[r] < info.extents[r]:
            raise ValueError(
                f"split = {s.split}: reduction loop {r} is tiled ({s.tile[r]}); a split "
                "reduction runs whole, without staging steps"
            )
    if s.pack:
        raise ValueError(f"split = {s.split}: a split reduction stages no operands (pack = [])")
