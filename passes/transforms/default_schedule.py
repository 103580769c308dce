"""`default-schedule`: a sensible untuned schedule for every kernel that has none.

The heuristic is analytic, from the access strides of passes/analysis/kernel_access.py:
vectorize the parallel loop that makes the inner (reduction) step cheapest and wastes the fewest
lanes, build a register tile with a second parallel loop that reuses the vector operands, keep
the accumulators in registers across the reduction loops, and tile long reductions for the cache.
It is the tuner's starting point, not a replacement for it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.passes import ModulePass

from dialects.sched import MAX_WIDTH, SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelInfo, analyze_kernel

MAX_ACCUMULATORS = 16
REDUCTION_TILE = 512
VECTOR_LOOP_TILE = 256
MAX_REDUCTION_UNROLL = 8


@functools.cache
def host_vector_width() -> int:
    """f32 lanes of the widest vector unit of this CPU (16 with AVX-512, 8 with AVX2)."""
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        if features.get("avx512f", False):
            return 16
        if features.get("avx2", False) or features.get("avx", False):
            return 8
    except Exception:  # pragma: no cover - llvmlite always reports on x86
        pass
    return 4


def vectorizable_along(info: KernelInfo, d: int) -> bool:
    """Whether the body can run with loop d as vector lanes (elementwise ops only)."""
    if info.iterators[d] != "parallel":
        return False
    block = info.op.body.block
    varying = set(block.args)  # values that differ between lanes
    for op in block.ops:
        if isinstance(op, linalg.IndexOp) and op.dim.value.data == d:
            return False
        if isinstance(op, linalg.YieldOp | linalg.IndexOp):
            continue
        if op.dialect_name() not in ("arith", "math") or isinstance(op, arith.IndexCastOp):
            return False
        lane_dependent = any(x in varying for x in op.operands)
        # xDSL 0.74's arith.cmpf/cmpi type a vector comparison as a scalar i1 (and llvm.fcmp
        # takes no vectors), so a comparison of lane values keeps the kernel scalar
        if lane_dependent and isinstance(op, arith.CmpfOp | arith.CmpiOp):
            return False
        if lane_dependent:
            varying.update(op.results)
    return True


def _divisor_at_most(n: int, limit: int) -> int:
    best = 1
    for k in range(1, min(n, limit) + 1):
        if n % k == 0:
            best = k
    return best


@dataclass(frozen=True)
class _VectorChoice:
    dim: int
    score: float


def choose_vector_loop(info: KernelInfo, width: int) -> _VectorChoice | None:
    red = math.prod(info.extents[d] for d in info.reduction_loops) if info.reduction_loops else 1
    inputs = [a for a in info.accesses if not a.is_output]
    scalar = (len(inputs) + 1.0) * width
    best: _VectorChoice | None = None
    for d in info.parallel_loops:
        if info.extents[d] < 2 or not vectorizable_along(info, d):
            continue
        cost_in = sum(
            0.25 if a.invariant_to(d) else 1.0 if a.contiguous_along(d) else float(width)
            for a in inputs
        )
        out = info.output
        cost_out = (1.0 if out.contiguous_along(d) else 2.0 * width) * (2.0 if red > 1 else 1.0) / red
        n = info.extents[d]
        utilization = n / (math.ceil(n / width) * width)
        score = (cost_in + cost_out + 1.0) / utilization
        if score < scalar and (best is None or score < best.score):
            best = _VectorChoice(d, score)
    return best


def default_schedule(info: KernelInfo, width: int | None = None) -> Schedule:
    width = width or host_vector_width()
    n = info.num_loops
    extents = info.extents
    tile = [0] * n
    unroll = [1] * n
    has_reduction = bool(info.reduction_loops)
    choice = choose_vector_loop(info, width)
    v = choice.dim if choice else -1
    if v >= 0:
        vectors = math.ceil(extents[v] / width)
        nvec = min(vectors, 2 if has_reduction else 4)
        unroll[v] = nvec * width
        if extents[v] > VECTOR_LOOP_TILE and has_reduction:
            tile[v] = VECTOR_LOOP_TILE
    else:
        nvec = 1
    if has_reduction:
        # second register-tile loop: the parallel loop along which most inputs are invariant
        # (their vectors are reused from registers), innermost first on ties
        others = [d for d in info.parallel_loops if d != v and extents[d] > 1]
        if others:
            inputs = [a for a in info.accesses if not a.is_output]
            u = max(others, key=lambda d: (sum(a.invariant_to(d) for a in inputs), d))
            unroll[u] = _divisor_at_most(extents[u], max(1, MAX_ACCUMULATORS // nvec))
            if unroll[u] < 3 and extents[u] > 3:  # awkward extent: accept a remainder tile
                unroll[u] = min(extents[u], max(1, MAX_ACCUMULATORS // nvec))
        # tile the reduction so one step's working set stays in cache
        rest = math.prod(extents[d] for d in info.reduction_loops)
        for d in info.reduction_loops:
            if rest <= REDUCTION_TILE:
                break
            inner = rest // extents[d]
            t = max(1, REDUCTION_TILE // max(inner, 1))
            t = _divisor_at_most(extents[d], t) if extents[d] % t else t
            if t < extents[d]:
                tile[d] = t
                rest = inner * t
        # a short innermost reduction loop (a conv window row) is unrolled: its loop overhead
        # would otherwise rival the FMAs of one step
        last = info.reduction_loops[-1]
        if extents[last] <= MAX_REDUCTION_UNROLL and v >= 0:
            unroll[last] = extents[last]
    order = info.parallel_loops + info.reduction_loops
    return Schedule(tuple(tile), tuple(order), tuple(unroll), v, width if v >= 0 else 1)


def schedule_of(op: linalg.GenericOp) -> Schedule | None:
    attr = op.attributes.get(SCHEDULE_ATTR_NAME)
    return attr.schedule() if isinstance(attr, ScheduleAttr) else None


@dataclass(frozen=True)
class DefaultSchedulePass(ModulePass):
    """Attach the analytic default schedule to every linalg.generic that has none."""

    name = "default-schedule"

    width: int = 0
    """Vector width in f32 lanes; 0 = the host CPU's."""

    threads: int = 1
    """With more than one, the outer loops of large kernels run across threads (parallelize)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from passes.transforms.parallelize import MAX_THREADS, parallel_schedule
        from passes.transforms.schedule_edit import check_option

        check_option(self.name, "width", self.width, 0, MAX_WIDTH, " (0: the host CPU's widest)")
        check_option(self.name, "threads", self.threads, 1, MAX_THREADS)

        for g in op.walk():
            if isinstance(g, linalg.GenericOp) and SCHEDULE_ATTR_NAME not in g.attributes:
                info = analyze_kernel(g)
                s = parallel_schedule(default_schedule(info, self.width or None), info, self.threads)
                g.attributes[SCHEDULE_ATTR_NAME] = ScheduleAttr.from_schedule(s)


__all__ = ["DefaultSchedulePass", "default_schedule", "host_vector_width"]
