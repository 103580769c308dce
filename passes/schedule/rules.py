"""The rules a schedule must follow on one kernel.

`Schedule.check` (dialects/sched.py) only knows the number of loops; these rules need the
kernel's KernelInfo: which loops can be vector lanes or run across threads, how big a register
tile the loop generator can unroll, and whether a packed operand's panel fits on the stack.
The schedule passes apply them when they edit a schedule, the lowering when it materializes
one, and the tuner to keep its configs valid. Each check raises ValueError with a message that
the caller prefixes with its own name.
"""

from __future__ import annotations

import math
from dataclasses import replace

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, SSAValue

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.reduction_split import combiner, float_combining_kind

MAX_UNROLLED_BODIES = 4096
"""The most copies of a kernel's body one register tile may hold (accumulators times the unroll
of the reduction loops): the register tile is generated unrolled, so a bigger one is IR the size
of a huge program (the tuner's tiles stay under 200)."""

MAX_PANEL_ELEMENTS = 32 * 1024
"""A panel lives on the stack of the thread running the tile (128 KiB of f32 at most)."""


# -- vector loop ------------------------------------------------------------------------------

SCALAR_ONLY_OPS = (
    arith.CmpfOp,
    arith.CmpiOp,
    arith.SIToFPOp,
    arith.UIToFPOp,
    arith.FPToSIOp,
    arith.FPToUIOp,
    arith.ExtSIOp,
    arith.ExtUIOp,
    arith.TruncIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.BitcastOp,
)
"""Body ops xDSL (0.74) builds on scalars only."""


def body_vectorizes(block: Block, lane_dim: int | None = None) -> bool:
    """Whether a linalg body can run on vector lanes: elementwise arith/math only, no bool
    operands, no comparison or conversion of lane values, and no linalg.index of the lane loop
    `lane_dim` (with None, of any loop: a fused stage has no loops of its own)."""
    # a vector of i1 is bit-packed in LLVM, a bool buffer holds one byte per element: bool
    # operands keep the kernel scalar
    if any(isinstance(a.type, IntegerType) and a.type.width.data == 1 for a in block.args):
        return False
    varying: set[SSAValue] = set(block.args)  # values that differ between lanes
    for op in block.ops:
        if isinstance(op, linalg.IndexOp):
            if lane_dim is None or op.dim.value.data == lane_dim:
                return False
            continue
        if isinstance(op, linalg.YieldOp):
            continue
        if op.dialect_name() not in ("arith", "math") or isinstance(op, arith.IndexCastOp):
            return False
        # xDSL 0.74's arith.cmpf/cmpi type a vector comparison as a scalar i1 (and llvm.fcmp
        # takes no vectors), and its conversions (sitofp, extsi, ...) take scalars only, so a
        # comparison or conversion of lane values keeps the kernel scalar
        if any(x in varying for x in op.operands):
            if isinstance(op, SCALAR_ONLY_OPS):
                return False
            varying.update(op.results)
    return True


def vectorizable_along(info: KernelInfo, d: int) -> bool:
    """Whether the kernel can run with parallel loop d as vector lanes."""
    return info.iterators[d] == "parallel" and body_vectorizes(info.op.body.block, d)


def reduces_in_vectors(s: Schedule, info: KernelInfo) -> bool:
    """Whether the schedule's vector loop is a reduction loop: each output keeps vector partial
    results along it, folded into one value after the loop (register_tile.py)."""
    return s.vector >= 0 and info.iterators[s.vector] == "reduction"


def reduction_vector_problem(info: KernelInfo, d: int) -> str | None:
    """Why reduction loop d cannot be vector lanes (None when it can): the body must be
    `out = combine(out, f(inputs))` with a float add, mul, max or min (the lanes' partials are
    combined in another order: reassociation, as every vectorized float reduction does), and f
    must vectorize along d."""
    block = info.op.body.block
    if info.iterators[d] != "reduction":
        return f"loop {d} is not a reduction loop"
    c = combiner(block) if len(info.op.outputs) == 1 else None
    if c is None or float_combining_kind(c) is None:
        return (
            "the body is not out = combine(out, value) with a float add, mul, max or min, so "
            "partial results along the loop cannot be combined"
        )
    if not body_vectorizes(block, d):
        return "the body does not vectorize along it (an index of it, a comparison, a conversion)"
    return None


def check_vector_loop(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless the schedule's vector loop can be vector lanes: a parallel loop,
    or the innermost reduction loop of the order whose body reduction_vector_problem accepts."""
    v = s.vector
    if v < 0 or info.iterators[v] == "parallel":
        return
    problem = reduction_vector_problem(info, v)
    if problem is None:
        innermost = [d for d in s.order if info.iterators[d] == "reduction"][-1]
        if innermost != v:
            problem = f"it is not the innermost reduction loop of the order ({innermost} is)"
    if problem is not None:
        raise ValueError(f"reduction loop {v} cannot be vectorized: {problem}")


# -- register tile ----------------------------------------------------------------------------


def unrolled_bodies(s: Schedule) -> int:
    """Copies of the kernel's body in one register tile (vector lanes count once per vector)."""
    n = 1
    for d, u in enumerate(s.unroll):
        n *= -(-u // s.width) if d == s.vector else u
    return n


def check_register_tile(s: Schedule) -> None:
    """Raise ValueError when the register tile is too big to generate (MAX_UNROLLED_BODIES)."""
    bodies = unrolled_bodies(s)
    if bodies > MAX_UNROLLED_BODIES:
        raise ValueError(
            f"the register tile (unroll {list(s.unroll)}, vector loop {s.vector}, width {s.width}) "
            f"holds {bodies} copies of the body; at most {MAX_UNROLLED_BODIES} "
            "(it is generated unrolled)"
        )


# -- packed operands --------------------------------------------------------------------------


def tile_box(info: KernelInfo, s: Schedule) -> list[int]:
    """The extent of each loop within one full innermost cache tile."""
    return [t if 0 < t < e else e for t, e in zip(s.tile, info.extents)]


def panel_shape(info: KernelInfo, i: int, s: Schedule) -> list[int]:
    """The box of operand i that one full cache tile reads."""
    size = tile_box(info, s)
    return [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in info.accesses[i].coefs]


def packable(info: KernelInfo, i: int) -> bool:
    """An input memref (read-only in the kernel), indexed with non-negative coefficients."""
    inputs = len(info.op.inputs)
    if not 0 <= i < inputs:
        return False
    a = info.accesses[i]
    return (
        not a.is_scalar
        and bool(a.shape)
        and all(c >= 0 for row in a.coefs for c in row)
        and a.value not in set(info.op.outputs)
    )


def check_pack(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless every packed operand can be packed with this schedule's tiles."""
    inputs = len(info.op.inputs)
    for i in s.pack:
        if not 0 <= i < inputs:
            raise ValueError(
                f"option 'operands': {i} is out of range; allowed: 0..{inputs - 1} "
                "(the kernel's inputs; only inputs can be packed)"
            )
        if not packable(info, i):
            raise ValueError(
                f"operand {i} cannot be packed (only input memrefs of the kernel, 0..{inputs - 1})"
            )
        elements = math.prod(panel_shape(info, i, s))
        if elements > MAX_PANEL_ELEMENTS:
            raise ValueError(
                f"operand {i}: a panel of {elements} elements for one cache tile exceeds "
                f"{MAX_PANEL_ELEMENTS} (tile the loops that index it)"
            )


# -- threads ----------------------------------------------------------------------------------


def leading_parallel_loops(info: KernelInfo, order: tuple[int, ...] | list[int]) -> int:
    """How many loops at the front of `order` are parallel iterators (the most that may run
    across threads with this order)."""
    k = 0
    while k < len(order) and info.iterators[order[k]] == "parallel":
        k += 1
    return k


def check_parallel(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError unless the first `s.parallel` loops of the order are parallel iterators."""
    for d in s.order[: s.parallel]:
        if info.iterators[d] != "parallel":
            raise ValueError(
                f"loop {d} is a reduction: only the outermost parallel loops can run across "
                f"threads (order {list(s.order)}, parallel = {s.parallel})"
            )


# -- the whole schedule -----------------------------------------------------------------------


def clamp_to_extents(s: Schedule, info: KernelInfo) -> Schedule:
    """`s` with tiles and register tiles larger than their loop cut to the loop (what the lowering
    does with them anyway: a tile covering the loop leaves it untiled); the vector loop's register
    tile stays a multiple of the width."""
    tile = tuple(min(t, e) for t, e in zip(s.tile, info.extents, strict=True))
    unroll = []
    for d, (u, e) in enumerate(zip(s.unroll, info.extents, strict=True)):
        cap = -(-e // s.width) * s.width if d == s.vector and s.width > 0 else e
        unroll.append(min(u, max(cap, 1)))
    return replace(s, tile=tile, unroll=tuple(unroll))


def legalize(s: Schedule, info: KernelInfo) -> Schedule:
    """`s` checked against the kernel's loops, clamped to their extents, with a register tile
    small enough to generate: what every schedule pass stores after its edit."""
    s.check(info.num_loops)
    s = clamp_to_extents(s, info)
    check_register_tile(s)
    return s
