"""The analytic default schedule of a kernel: the tuner's starting point, and what a kernel
without a `#sched.schedule` is lowered with.

The heuristic reads the access strides of passes/analysis/kernel_access.py and the CPU's
description (cpu_target.py): vectorize the loop that makes the inner (reduction) step cheapest
and wastes the fewest lanes (a parallel loop, or the innermost reduction loop itself, whose
lanes are then partial results folded after it: a softmax or LayerNorm row), build a register
tile with one (or, where one still loads more than it multiplies, two) more parallel loops that
reuse the vector operands (at most half the register file in accumulators; no more than the
FMAs in flight where the rows reuse only broadcasts), keep the accumulators in registers across
the reduction loops, tile long reductions so that the operand the register tile reuses, where
the next register tile reads it again, stays in half the L1, tile a long vector loop so that the streamed operand's tile stays in half the L2,
and pack that tile into a contiguous panel when its rows would overflow the L2's sets.
`parallel_schedule` then spreads the outer loops of a large kernel over threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo, OperandAccess
from passes.schedule.cache_fit import crowds_cache
from passes.schedule.cpu_target import CpuTarget, cpu_target
from passes.schedule.rules import (
    MAX_PANEL_ELEMENTS,
    packable,
    panel_shape,
    reduction_vector_problem,
    vectorizable_along,
)

F32_BYTES = 4
CACHE_SHARE = 2
"""A cache tile aims at 1/CACHE_SHARE of its cache level (the rest: the other operands)."""
GATHER_LANE_COST = 2.0
"""Loads (per lane) of a vector whose lanes are a stride apart inside a reduction loop: a load and
an insert per lane. A row-wise reduction over its contiguous axis (a softmax, LayerNorm or
RMSNorm row) vectorized across rows gathers one element of 16 rows at every step; costed at one
load per lane it beat scalar code on paper and ran 1.6-1.9x slower than it on Zen 4 (an RMSNorm
over 128 x 1024, 0.23 -> 0.14 ms; a softmax over 8 x 128 x 128, 0.22 -> 0.11 ms: `ziggurat bench`
on one-node models). Not every row gains: over 768-float rows (3 KB apart, whose lines spread
over the L1's sets) a LayerNorm went 0.058 -> 0.106 ms, where 2-4 KB apart the gathered lines
thrash one or two sets (HISTORY.md). Those rows are now vectorized along the row instead
(_reduction_vector_choice: 0.035 ms). Kernels without a reduction keep one load per lane: not
measured there."""
MAX_REDUCTION_UNROLL = 8
"""An innermost reduction loop this short (a conv window row) is unrolled completely."""

REDUCTION_VECTORS = 2
"""Vectors across the vector loop in a kernel with a reduction (a matmul's register tile is
REDUCTION_VECTORS x width lanes wide); 4 in one without."""

MATVEC_ROWS = 16
"""Reduction steps per chunk of a matrix-vector kernel: its accumulators are loaded and
stored once per chunk, 1/16 of the matrix's traffic."""

MIN_PARALLEL_ITERATIONS = 1 << 15
"""Kernels with fewer loop iterations than this stay sequential: waking the pool costs more."""
CHUNKS_PER_THREAD = 4
"""Cache tiles per thread that parallel_schedule aims for (slack for uneven tiles)."""


def divisor_at_most(n: int, limit: int, multiple_of: int = 1) -> int:
    """The largest divisor of n that is at most `limit` and a multiple of `multiple_of` (that
    itself when none is)."""
    best = multiple_of
    for k in range(multiple_of, min(n, max(limit, 1)) + 1, multiple_of):
        if n % k == 0:
            best = k
    return best


@dataclass(frozen=True)
class _VectorChoice:
    dim: int
    score: float


def _choose_vector_loop(
    info: KernelInfo, width: int, along_reduction: bool = True
) -> _VectorChoice | None:
    """The loop whose vectorization costs the fewest loads per useful lane (a parallel loop, or
    with `along_reduction` the innermost reduction loop), or None when scalar code is
    cheaper."""
    red = math.prod(info.extents[d] for d in info.reduction_loops) if info.reduction_loops else 1
    inputs = [a for a in info.accesses if not a.is_output]
    scalar = (len(inputs) + 1.0) * width
    best: _VectorChoice | None = None
    for d in info.parallel_loops:
        if info.extents[d] < 2 or not vectorizable_along(info, d):
            continue
        cost_in = sum(
            0.25
            if a.invariant_to(d)
            else 1.0
            if a.contiguous_along(d)
            else width * (GATHER_LANE_COST if red > 1 else 1.0)
            for a in inputs
        )
        out = info.output
        cost_out = (
            (1.0 if out.contiguous_along(d) else 2.0 * width) * (2.0 if red > 1 else 1.0) / red
        )
        n = info.extents[d]
        utilization = n / (math.ceil(n / width) * width)
        score = (cost_in + cost_out + 1.0) / utilization
        if score < scalar and (best is None or score < best.score):
            best = _VectorChoice(d, score)
    lanes_reduce = _reduction_vector_choice(info, width, red) if along_reduction else None
    if lanes_reduce and lanes_reduce.score < (best.score if best else scalar):
        best = lanes_reduce
    return best


def _reduction_vector_choice(info: KernelInfo, width: int, red: int) -> _VectorChoice | None:
    """The innermost reduction loop as vector lanes (vector partials per output, folded after
    the loop), costed like a parallel loop: loads per vector step, the last `extent % width`
    steps as scalar code, and the fold spread over the reduction's steps.
    A row-wise softmax, LayerNorm or RMSNorm sum reads its row contiguously this way, where
    across rows it gathers (GATHER_LANE_COST)."""
    if not info.reduction_loops:
        return None
    r = info.reduction_loops[-1]
    n = info.extents[r]
    if n < width or reduction_vector_problem(info, r) is not None:
        return None
    inputs = [a for a in info.accesses if not a.is_output]
    cost_in = sum(
        0.25 if a.invariant_to(r) else 1.0 if a.contiguous_along(r) else width * GATHER_LANE_COST
        for a in inputs
    )
    # per `width` elements of the loop: its whole vectors, its last n % width steps scalar
    # (a load per input and the op each), and the fold (a shuffle and an op per halving)
    steps = (n // width * (cost_in + 1.0) + n % width * (len(inputs) + 1.0)) / (n / width)
    fold = 2.0 * math.log2(width) * width / red
    return _VectorChoice(r, steps + fold)


def default_schedule(
    info: KernelInfo,
    width: int | None = None,
    cpu: CpuTarget | None = None,
    along_reduction: bool = True,
) -> Schedule:
    """The sequential default schedule of the kernel for `cpu` (None: this machine), with
    `width` f32 lanes (None: the CPU's); `along_reduction=False` keeps the vector loop a
    parallel one (the GPU lowerings vectorize only those)."""
    cpu = cpu or cpu_target()
    if width:
        cpu = cpu.with_width(width)
    width = cpu.width
    n = info.num_loops
    extents = info.extents
    tile = [0] * n
    unroll = [1] * n
    has_reduction = bool(info.reduction_loops)
    choice = _choose_vector_loop(info, width, along_reduction)
    v = choice.dim if choice else -1
    order = info.parallel_loops + info.reduction_loops
    if v >= 0 and info.iterators[v] == "reduction":
        # one output per register tile: its partials are the independent chains
        unroll[v] = _reduction_chains(extents[v], width) * width
        return Schedule(tuple(tile), tuple(order), tuple(unroll), v, width)
    nvec = (
        min(math.ceil(extents[v] / width), REDUCTION_VECTORS if has_reduction else 4)
        if v >= 0
        else 1
    )
    if v >= 0:
        unroll[v] = nvec * width
    if has_reduction:
        budget = max(1, cpu.default_accumulators // nvec)
        slab = cpu.l2.size // (CACHE_SHARE * F32_BYTES)
        rows = _register_tile(info, v, nvec, budget, cpu.fma_in_flight, slab, width)
        for d, r in rows.items():
            unroll[d] = r
        if not rows and v >= 0 and _is_matrix_vector(info, v):
            _tile_matrix_vector(info, cpu, tile, unroll, v)
        else:
            _tile_reduction(info, cpu, tile, unroll, v)
            if v >= 0:
                _tile_vector_loop(info, cpu, tile, unroll, v)
        # a short innermost reduction loop (a conv window row) is unrolled: its loop overhead
        # would otherwise rival the FMAs of one step
        last = info.reduction_loops[-1]
        if extents[last] <= MAX_REDUCTION_UNROLL and v >= 0:
            unroll[last] = extents[last]
    s = Schedule(tuple(tile), tuple(order), tuple(unroll), v, width if v >= 0 else 1)
    return _pack_crowded_panels(s, info, cpu) if has_reduction and v >= 0 else s


REDUCTION_CHAINS = 4
"""Vector partials per output of a kernel vectorized along its reduction: independent chains
of the combining op (an add's latency is 3-4 cycles at two a cycle)."""


def _reduction_chains(extent: int, width: int) -> int:
    return max(1, min(REDUCTION_CHAINS, extent // width))


def _register_tile(
    info: KernelInfo,
    v: int,
    nvec: int,
    budget: int,
    in_flight: int,
    slab: int,
    width: int,
) -> dict[int, int]:
    """The register tile's rows beside the vector loop: the parallel loop that leaves the fewest
    loads per accumulator at each reduction step (innermost first on ties); where that still
    loads more than once per FMA (one vector of a short image row beside 16 output channels:
    17 loads for 16 FMAs), the pair of loops that loads least (a pointwise convolution's 8
    output channels x 2 image rows: 10 loads). An input invariant to a tile loop is loaded once
    and reused from registers, one varying along it once per row; a load is a vector when the
    input varies along the vector loop, a broadcast otherwise. At most `budget` rows; where
    every FMA still needs a load of its own and the rows reuse no vector (a depthwise conv:
    each row reads its own input vectors, only the weight broadcasts are shared), more
    accumulators than the `in_flight` FMAs that keep the FMA units busy only add register
    pressure, so the tile stops there (3x3 depthwise on Zen 5: 8 -> 4 rows of two vectors,
    14 -> 7 rows of one, 1.2-1.45x faster)."""
    extents = info.extents
    others = [d for d in info.parallel_loops if d != v and extents[d] > 1]
    inputs = [a for a in info.accesses if not a.is_output and not a.is_scalar]

    def loads_per_accumulator(tile: dict[int, int]) -> float:
        loads = sum(
            math.prod(1 if a.invariant_to(d) else r for d, r in tile.items())
            * (1 if v < 0 or a.invariant_to(v) else nvec)
            for a in inputs
        )
        return loads / (math.prod(tile.values()) * nvec)

    def streamed(tile: dict[int, int]) -> int:
        # elements of the inputs that vary along the vector loop which one register tile
        # streams over the whole reduction: rows along loops such an input varies with
        # (a blocked conv's output-channel blocks) multiply its slab
        return sum(
            math.prod(r for d, r in tile.items() if not a.invariant_to(d))
            * nvec
            * width
            * math.prod(extents[d] for d in info.reduction_loops if not a.invariant_to(d))
            for a in inputs
            if v >= 0 and not a.invariant_to(v)
        )

    def fitting(tiles: list[dict[int, int]]) -> list[dict[int, int]]:
        """The tiles whose streamed slab stays in the L2 share (`slab` elements), if any: a
        tile that streams more re-reads it from L3 at every register tile."""
        fit = [t for t in tiles if streamed(t) <= slab]
        return fit or tiles

    if not others:
        return {}
    single = min(
        fitting([{d: divisor_at_most(extents[d], budget)} for d in others]),
        key=lambda t: (round(loads_per_accumulator(t), 9), [-d for d in t]),
    )
    # with no more loads than FMAs per step the FMA units bound it already, and a second loop
    # would only cut the first's rows (more passes over the operand streamed along it)
    if loads_per_accumulator(single) > 1.0:
        pairs = [
            {first: r, second: divisor_at_most(extents[second], budget // r)}
            for i, first in enumerate(others)
            for second in others[i + 1 :]
            for r in range(2, budget // 2 + 1)
            if extents[first] % r == 0  # no remainder tiles in two loops
        ]
        # fewest loads per accumulator; then one loop; then the most accumulators
        best = min(
            fitting([single, *(t for t in pairs if min(t.values()) >= 2)]),
            key=lambda t: (round(loads_per_accumulator(t), 9), len(t), -math.prod(t.values())),
        )
        if len(best) == 2:
            return best
    ((d, rows),) = single.items()

    def with_remainder(rows: int, limit: int) -> int:
        # an awkward extent (a prime, say): accept a remainder tile
        return min(extents[d], limit) if rows < 3 and extents[d] > 3 else rows

    rows = with_remainder(rows, budget)
    # rows that reuse a vector operand (one invariant to them) amortize its load; rows that
    # only reuse broadcasts (a depthwise conv's weights) do not
    reuses_vector = v >= 0 and any(a.invariant_to(d) and not a.invariant_to(v) for a in inputs)
    if loads_per_accumulator({d: rows}) > 1.0 and not reuses_vector:
        limit = max(1, min(budget, in_flight // nvec))
        rows = min(rows, with_remainder(divisor_at_most(extents[d], limit), limit))
    return {d: rows}


def _stepping_loop(info: KernelInfo, unroll: list[int]) -> int | None:
    """The loop along which one register tile follows the last: the innermost parallel loop
    of the order that the register tile does not cover whole (None: there is one tile)."""
    steps = [d for d in info.parallel_loops if info.extents[d] > unroll[d]]
    return steps[-1] if steps else None


def _read_again(info: KernelInfo, a: OperandAccess, step: int) -> bool:
    """Whether the register tile after this one (along loop `step`) reads `a` again: `a` does
    not vary along `step`, or it slides along it with a reduction loop (a convolution's window:
    the next output column reads most of this one's input columns)."""
    return a.invariant_to(step) or any(
        row[step] and any(row[r] and info.extents[r] > 1 for r in info.reduction_loops)
        for row in a.coefs
    )


def _reused_per_step(info: KernelInfo, unroll: list[int], v: int) -> int:
    """Elements of the operands the register tile reuses along the vector loop (the inputs
    invariant to it, e.g. matmul's A) that one reduction step reads: what stays in L1. Only
    an operand that the next register tile reads again counts (invariant to the stepping loop
    too): a batched product over B's panels steps along A's rows, and there a reduction tile
    kept nothing in L1 but made every tile of the result a round trip through memory (GPT-2's
    LM head, a 26 MB result: 97 -> 88 ms on Zen 4, HISTORY.md)."""
    step = _stepping_loop(info, unroll)
    elements = 0
    for a in info.accesses:
        if a.is_output or a.is_scalar or (v >= 0 and not a.invariant_to(v)):
            continue
        if step is not None and not _read_again(info, a, step):
            continue
        if all(a.invariant_to(d) for d in info.reduction_loops):
            continue
        elements += math.prod(unroll[d] for d in info.parallel_loops if not a.invariant_to(d))
    return elements


def _tile_reduction(
    info: KernelInfo, cpu: CpuTarget, tile: list[int], unroll: list[int], v: int
) -> None:
    """Tile the reduction loops, outermost first, so that a cache tile's reduction iterations
    keep the reused operand's strip in 1/CACHE_SHARE of the L1."""
    reused = _reused_per_step(info, unroll, v)
    if not reused:
        return  # nothing is reused from L1 across the register tiles: nothing to protect
    limit = max(1, cpu.l1.size // (CACHE_SHARE * F32_BYTES * reused))
    rest = math.prod(info.extents[d] for d in info.reduction_loops)
    for d in info.reduction_loops:
        if rest <= limit:
            break
        inner = rest // info.extents[d]
        t = max(1, limit // max(inner, 1))
        t = divisor_at_most(info.extents[d], t) if info.extents[d] % t else t
        if t < info.extents[d]:
            tile[d] = t
            rest = inner * t


def _is_matrix_vector(info: KernelInfo, v: int) -> bool:
    """One row of output only (no register-tile rows): an input varies along the vector loop
    and the reduction (the matrix, each element used once) and one is invariant to the vector
    loop (the vector): a matrix-vector product, bound by streaming the matrix."""
    inputs = [a for a in info.accesses if not a.is_output and not a.is_scalar]
    matrix = any(
        not a.invariant_to(v) and not all(a.invariant_to(d) for d in info.reduction_loops)
        for a in inputs
    )
    return matrix and any(a.invariant_to(v) for a in inputs)


def _tile_matrix_vector(
    info: KernelInfo, cpu: CpuTarget, tile: list[int], unroll: list[int], v: int
) -> None:
    """Walk the matrix in chunks of MATVEC_ROWS reduction steps across a vector-loop tile
    whose accumulators stay in a quarter of L1: per chunk each matrix row is read as one long
    contiguous run (what the hardware prefetcher follows), where a whole reduction per
    register tile jumps a row stride at every step. (A decode step's GEMVs, Zen 4: 768 x 3072
    from 5.6 to 10 GFLOP/s, onnxruntime 6.3.) A divisor of the vector loop under half that
    tile is not taken: a remainder tile costs less than runs cut short."""
    last = info.reduction_loops[-1]
    if info.extents[last] > 2 * MATVEC_ROWS:
        tile[last] = divisor_at_most(info.extents[last], MATVEC_ROWS)
    limit = cpu.l1.size // (4 * F32_BYTES)
    tile[v] = _vector_loop_tile(info.extents[v], limit, unroll[v], least_divisor=0.5) or tile[v]


def _reduction_iterations(info: KernelInfo, tile: list[int]) -> int:
    return math.prod(
        tile[d] if 0 < tile[d] < info.extents[d] else info.extents[d] for d in info.reduction_loops
    )


def _tile_vector_loop(
    info: KernelInfo, cpu: CpuTarget, tile: list[int], unroll: list[int], v: int
) -> None:
    """Tile a long vector loop (in register tiles, dividing the loop where possible) so that a
    cache tile of the operands streamed along it (matmul's B: reduction iterations x vector-loop
    tile) fits 1/CACHE_SHARE of L2."""
    limit = cpu.l2.size // (CACHE_SHARE * F32_BYTES * _reduction_iterations(info, tile))
    tile[v] = _vector_loop_tile(info.extents[v], limit, unroll[v]) or tile[v]


def _vector_loop_tile(extent: int, limit: int, step: int, least_divisor: float = 0.0) -> int:
    """The tile of a vector loop of `extent` elements for at most `limit` of them, in register
    tiles of `step` (0: the loop fits untiled). A divisor of the loop where there is one of at
    least `least_divisor` of the tile: a remainder tile would stop parallel_schedule from
    spreading the loop's tiles over threads."""
    t = max(step, limit // step * step)
    if extent <= t:
        return 0
    d = divisor_at_most(extent, t, step)
    return d if extent % d == 0 and d >= least_divisor * t else t


def _pack_crowded_panels(s: Schedule, info: KernelInfo, cpu: CpuTarget) -> Schedule:
    """Pack each input whose cache tile cannot stay in the L2 as laid out: its rows, a large
    power of two apart, need more lines in some set than the set has ways (cache_fit.py). The
    vector loop's tile is narrowed (in register tiles) until the panel fits MAX_PANEL_ELEMENTS;
    an input is left unpacked if that leaves fewer than two register tiles per cache tile, as
    the other operands would then be re-read for every one (measured on Zen 4: ResNet-18's 3x3
    convolutions lost 5% with their weights packed that way)."""
    v, step = s.vector, s.unroll[s.vector]
    for i, a in enumerate(info.accesses):
        if not packable(info, i) or a.invariant_to(v):
            continue
        if not crowds_cache(panel_shape(info, i, s), a.mem_strides, cpu.l2, share=1.0):
            continue
        tile = list(s.tile)
        tile[v] = tile[v] if 0 < tile[v] < info.extents[v] else info.extents[v]
        while tile[v] > step:
            if math.prod(panel_shape(info, i, replace(s, tile=tuple(tile)))) <= MAX_PANEL_ELEMENTS:
                break
            tile[v] = max(step, tile[v] // 2 // step * step)
        packed = replace(s, tile=tuple(t if t < e else 0 for t, e in zip(tile, info.extents)))
        fits = math.prod(panel_shape(info, i, packed)) <= MAX_PANEL_ELEMENTS
        if fits and min(tile[v], info.extents[v]) >= min(2 * step, info.extents[v]):
            s = replace(packed, pack=(*s.pack, i))
    return s


def _restreams_large_operand(info: KernelInfo, d: int, l2_bytes: int) -> bool:
    """Whether an input that loop d does not index but the reduction does (matmul's B for the
    row loop) is larger than the L2: every chunk of d would stream all of it again."""
    for a in info.accesses:
        if a.is_output or a.is_scalar or not a.invariant_to(d):
            continue
        if all(a.invariant_to(r) for r in info.reduction_loops):
            continue
        elements = math.prod(
            info.extents[e] for e in range(info.num_loops) if not a.invariant_to(e)
        )
        if elements * F32_BYTES > l2_bytes:
            return True
    return False


def parallel_schedule(
    s: Schedule, info: KernelInfo, threads: int, cpu: CpuTarget | None = None
) -> Schedule:
    """`s` with its outermost parallel loops run across `threads` threads (the default heuristic).

    Leading parallel loops of the order are collapsed until there are CHUNKS_PER_THREAD cache
    tiles per thread; an untiled loop gets the smallest tile (a multiple of its register tile
    that divides the extent) that reaches that count. A loop whose every chunk would stream an
    input larger than the L2 again (the row loop of a matmul with a big B: a transformer's
    projections, its LM head) is cut into `threads` chunks only, and the next loops supply the
    rest (GPT-2 at 2 threads was slower than at 1: 8 row chunks each read all of B).
    """
    if threads <= 1 or math.prod(info.extents) < MIN_PARALLEL_ITERATIONS:
        return s
    cpu = cpu or cpu_target()
    want = threads * CHUNKS_PER_THREAD
    tile = list(s.tile)
    count, loops = 1, 0
    for d in s.order:
        if info.iterators[d] != "parallel" or count >= want:
            break
        loops += 1
        ext, reg = info.extents[d], max(s.unroll[d], 1)
        t = tile[d] if 0 < tile[d] < ext else ext
        if ext % t:
            break  # a peeled remainder tile: collapsing stops here (see parallel_dims)
        goal = want
        if ext > 1 and _restreams_large_operand(info, d, cpu.l2.size):
            goal = min(want, count * threads)
        fits = [k for k in range(reg, t + 1, reg) if t % k == 0 and ext % k == 0]
        enough = [k for k in fits if count * (ext // k) >= goal]
        if enough:
            t = max(enough)
        elif fits:
            t = min(fits)
        tile[d] = t if t < ext else 0
        count *= ext // t
    if count < 2:
        return s
    return replace(s, tile=tuple(tile), parallel=loops)
