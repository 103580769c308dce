"""NonMaxSuppression (opsets 10, 11+): greedy selection of boxes by descending score, dropping
those that overlap an already selected box of the same batch and class by more than
iou_threshold, as onnx's reference implementation (which generated the node tests) does.

The rows (batch, class, box) are only known at run time, so the output is allocated at its
upper bound B * C * min(N, max_output_boxes_per_class), zero past their number, and marked with
it (`Importer.bounded`). Every (batch, class) pair is processed at once, as vectors:

1. rank the boxes of each pair by descending score, ties by ascending index (pairwise counts),
   and drop those whose score is not above score_threshold (when given);
2. the suppression test of every box pair of a batch, [B, N, N], with the reference's float32
   arithmetic and comparisons, gathered into score order for each pair;
3. the greedy pass, unrolled over the N score-ordered positions: position p is selected if it
   is still free, and then frees none of the later positions it overlaps. The selection stops
   after max_output_boxes_per_class boxes: the same as selecting greedily without the limit and
   keeping the first ones, so the limit is applied afterwards with a running count;
4. the selected rows compacted in (batch, class, score order) order, as NonZero compacts.

The unroll makes compile time grow with N (MAX_BOXES bounds it). A NaN score ranks as -inf
(ties broken by index, as for equal scores) and never passes a score threshold; onnx's
reference leaves its order to Python's sort. The thresholds are not range-checked, as in the
reference (onnxruntime refuses an iou_threshold outside [0, 1])."""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
)
from compiler.frontend.ops.nonzero import running_count
from dialects import graph as g

MAX_BOXES = 256
"""The most boxes per batch (N): the greedy pass is unrolled once per box (a slice, an and and
a where each), so compile time grows with N. Measured on a shared 2-core machine, a whole model
of one node compiles in 3-4 s at N = 16, 4-12 s at N = 64 and 10-28 s at N = 256 (1 to 80
classes), mostly in LLVM."""


def _thresholds(imp: Importer, node: onnx.NodeProto) -> tuple[int, float, float | None]:
    """max_output_boxes_per_class (0, the default, selects nothing), iou_threshold (default 0)
    and score_threshold (None: no score filter): attribute-like inputs, needed at import
    time. An empty tensor counts as absent, as in the reference."""

    def given(i: int, what: str) -> float | None:
        if not imp.has(node, i):
            return None
        if imp.const_input(node, i, what).size == 0:
            return None
        return imp.scalar_input(node, i, what)

    max_output = given(2, "max_output_boxes_per_class")
    iou = given(3, "iou_threshold")
    return (
        max(int(max_output), 0) if max_output is not None else 0,
        iou if iou is not None else 0.0,
        given(4, "score_threshold"),
    )


def _python_max(imp: Importer, a: SSAValue, b: SSAValue) -> SSAValue:
    """Python's max(a, b): b only if b > a (so NaN handling follows the reference)."""
    return imp.op(g.WhereOp(imp.op(g.GreaterOp(b, a)), b, a))


def _python_min(imp: Importer, a: SSAValue, b: SSAValue) -> SSAValue:
    return imp.op(g.WhereOp(imp.op(g.LessOp(b, a)), b, a))


def _not_at_most(imp: Importer, a: SSAValue, b: SSAValue | float) -> SSAValue:
    """not (a <= b): the reference returns early on `a <= b`, so NaN passes."""
    rhs = imp.scalar(b) if isinstance(b, float) else b
    return imp.op(g.NotOp(imp.op(g.LessEqualOp(a, rhs))))


def _extents(imp: Importer, boxes: SSAValue, center: int) -> list[tuple[SSAValue, SSAValue]]:
    """(min, max) along x and along y of every box, each [B, N, 1]."""
    coords = imp.emit(g.SplitOp(boxes, axis=2, sizes=[1, 1, 1, 1])).results
    if center == 0:  # [y1, x1, y2, x2], either corner first
        out = []
        for lo, hi in ((coords[1], coords[3]), (coords[0], coords[2])):
            swap = imp.op(g.GreaterEqualOp(lo, hi))
            out.append((imp.op(g.WhereOp(swap, hi, lo)), imp.op(g.WhereOp(swap, lo, hi))))
        return out
    out = []  # [x_center, y_center, width, height]
    for mid, size in ((coords[0], coords[2]), (coords[1], coords[3])):
        half = imp.op(g.DivOp(size, imp.scalar(2.0)))
        out.append((imp.op(g.SubOp(mid, half)), imp.op(g.AddOp(mid, half))))
    return out


def _suppresses(imp: Importer, boxes: SSAValue, center: int, iou_threshold: float) -> SSAValue:
    """[B, N, N] i1: at [b, i, j], whether box j (the candidate) is suppressed by the selected
    box i, evaluated as the reference's suppress_by_iou(box1=j, box2=i) in float32."""
    b, n, _ = imp.shape_of(boxes)
    (x_lo, x_hi), (y_lo, y_hi) = _extents(imp, boxes, center)

    def cand(v: SSAValue) -> SSAValue:  # box1, along the last axis
        return imp.op(g.ReshapeOp(v, shape=[b, 1, n]))

    ok = None
    sides = []
    for lo, hi in ((x_lo, x_hi), (y_lo, y_hi)):
        inter_lo = _python_max(imp, cand(lo), lo)
        inter_hi = _python_min(imp, cand(hi), hi)
        overlap = _not_at_most(imp, inter_hi, inter_lo)
        ok = overlap if ok is None else imp.op(g.AndOp(ok, overlap))
        sides.append(imp.op(g.SubOp(inter_hi, inter_lo)))
    assert ok is not None
    inter = imp.op(g.MulOp(sides[0], sides[1]))
    area = imp.op(g.MulOp(imp.op(g.SubOp(x_hi, x_lo)), imp.op(g.SubOp(y_hi, y_lo))))  # [B, N, 1]
    area1 = cand(area)
    union = imp.op(g.SubOp(imp.op(g.AddOp(area1, area)), inter))
    for positive in (inter, area1, area, union):
        ok = imp.op(g.AndOp(ok, _not_at_most(imp, positive, 0.0)))
    iou = imp.op(g.DivOp(inter, union))
    return imp.op(g.AndOp(ok, imp.op(g.GreaterOp(iou, imp.scalar(iou_threshold)))))


@converter("NonMaxSuppression")
def convert_non_max_suppression(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    center = int(attrs(node).get("center_point_box", 0))
    if center not in (0, 1):
        raise imp.error(f"center_point_box must be 0 or 1, got {center}")
    max_output, iou_threshold, score_threshold = _thresholds(imp, node)
    box_shape, score_shape = imp.shape(node.input[0]), imp.shape(node.input[1])
    if len(box_shape) != 3 or box_shape[2] != 4:
        raise imp.error(f"boxes must have shape [batches, boxes, 4], got {list(box_shape)}")
    if len(score_shape) != 3 or score_shape[0] != box_shape[0] or score_shape[2] != box_shape[1]:
        raise imp.error(
            f"scores must have shape [batches, classes, boxes] = [{box_shape[0]}, C, "
            f"{box_shape[1]}], got {list(score_shape)}"
        )
    b, c, n = score_shape
    per_class = min(n, max_output)
    if b * c * per_class == 0:  # nothing can be selected
        return [np.zeros((0, 3), np.int64)]
    if n > MAX_BOXES:
        raise imp.error(
            f"{n} boxes per batch: the greedy selection is unrolled once per box, and compile "
            f"time grows with it; at most {MAX_BOXES} are supported"
        )
    pairs = b * c
    largest = max(pairs * n * n, pairs * per_class * pairs)
    imp.check_composed(
        largest, f"{pairs} (batch, class) pairs of {n} boxes need {largest} pairwise comparisons"
    )
    boxes, scores = imp.value(node.input[0]), imp.value(node.input[1])
    scores = imp.op(g.ReshapeOp(scores, shape=[pairs, n]))
    zero = imp.constant(np.int64(0))

    # 1. order[g, i]: box i's position in its pair's descending score order
    nan = imp.op(g.NotOp(imp.op(g.EqualOp(scores, scores))))
    key = imp.op(g.WhereOp(nan, imp.scalar(-np.inf), scores))
    key_i = imp.op(g.ReshapeOp(key, shape=[pairs, n, 1]))
    key_j = imp.op(g.ReshapeOp(key, shape=[pairs, 1, n]))
    earlier = imp.constant(np.tri(n, k=-1, dtype=np.bool_))  # [i, j]: j < i
    ahead = imp.op(  # box j comes before box i
        g.OrOp(
            imp.op(g.GreaterOp(key_j, key_i)),
            imp.op(g.AndOp(imp.op(g.EqualOp(key_j, key_i)), earlier)),
        )
    )
    order = imp.op(g.ReduceSumOp(imp.op(g.CastOp(ahead, to=str(i64))), axes=[2], keepdims=0))
    positions = np.arange(n, dtype=np.int64)
    # at[g, p, i]: box i is at position p; box_at[g, p]: the box at position p
    at = imp.op(
        g.EqualOp(imp.op(g.ReshapeOp(order, shape=[pairs, 1, n])), imp.constant(positions[:, None]))
    )
    box_at = imp.op(
        g.ReduceSumOp(imp.op(g.WhereOp(at, imp.constant(positions), zero)), axes=[2], keepdims=0)
    )
    if score_threshold is not None:  # the candidates: scores above the threshold
        passes = imp.op(g.GreaterOp(scores, imp.scalar(score_threshold)))
        passes = imp.op(g.ReshapeOp(passes, shape=[pairs, 1, n]))
        free = imp.op(
            g.ReduceMaxOp(imp.op(g.AndOp(at, passes)), axes=[2], keepdims=0)
        )  # [pairs, n], in score order
    else:
        free = imp.constant(np.ones((pairs, n), np.bool_))

    # 2. blocks[g, p, q]: selecting position p suppresses position q
    suppresses = imp.op(
        g.ReshapeOp(_suppresses(imp, boxes, center, iou_threshold), shape=[b * n * n])
    )
    # the flat index of [batch, box at p, box at q] in suppresses
    batch_of_pair = np.repeat(np.arange(b, dtype=np.int64), c).reshape(pairs, 1, 1)
    at_p = imp.op(g.ReshapeOp(box_at, shape=[pairs, n, 1]))
    at_q = imp.op(g.ReshapeOp(box_at, shape=[pairs, 1, n]))
    offset = imp.op(g.AddOp(imp.constant(batch_of_pair * n * n), at_q))
    flat = imp.op(g.AddOp(imp.op(g.MulOp(at_p, imp.constant(np.int64(n)))), offset))
    blocks = imp.op(g.GatherOp(suppresses, flat, axis=0))  # [pairs, n, n]
    # only later positions: then a position's bit changes only before it is reached
    later = imp.constant(np.triu(np.ones((n, n), np.bool_), k=1))  # [p, q]: q > p
    spared = imp.op(g.NotOp(imp.op(g.AndOp(blocks, later))))
    rows = imp.emit(g.SplitOp(spared, axis=1, sizes=[1] * n)).results  # each [pairs, 1, n]

    # 3. the greedy pass over the positions in score order: `free` ends as the selection
    for p in range(n - 1):
        here = imp.op(g.SliceOp(free, starts=[0, p], ends=[pairs, p + 1], steps=[1, 1]))
        row = imp.op(g.ReshapeOp(rows[p], shape=[pairs, n]))
        free = imp.op(g.WhereOp(here, imp.op(g.AndOp(free, row)), free))
    chosen = free  # [pairs, n]

    # the first max_output_boxes_per_class selected of each pair
    ones = imp.op(g.CastOp(chosen, to=str(i64)))
    upto = imp.constant(np.tri(n, dtype=np.bool_))  # [p, q]: q <= p
    terms = imp.op(g.WhereOp(upto, imp.op(g.ReshapeOp(ones, shape=[pairs, 1, n])), zero))
    rank = imp.op(g.ReduceSumOp(terms, axes=[2], keepdims=0))  # selected up to position p
    kept = imp.op(g.AndOp(chosen, imp.op(g.LessEqualOp(rank, imp.constant(np.int64(per_class))))))
    counts = imp.op(g.ReduceSumOp(imp.op(g.CastOp(kept, to=str(i64))), axes=[1], keepdims=0))
    # table[g, j]: the box selected j-th in pair g
    nth = imp.constant(np.arange(1, per_class + 1, dtype=np.int64)[:, None])  # [j, 1]
    match = imp.op(
        g.AndOp(
            imp.op(g.ReshapeOp(kept, shape=[pairs, 1, n])),
            imp.op(g.EqualOp(imp.op(g.ReshapeOp(rank, shape=[pairs, 1, n])), nth)),
        )
    )
    table = imp.op(
        g.ReduceSumOp(
            imp.op(g.WhereOp(match, imp.op(g.ReshapeOp(box_at, shape=[pairs, 1, n])), zero)),
            axes=[2],
            keepdims=0,
        )
    )  # [pairs, per_class]

    # 4. output row k: the pair g whose rows start at or before k, its (k - start)-th box
    through = running_count(imp, counts)  # rows of pairs <= g
    start = imp.op(g.SubOp(through, counts))
    total = imp.op(g.ReduceSumOp(counts, axes=[0], keepdims=0))
    bound = pairs * per_class
    slots = np.arange(bound, dtype=np.int64)[:, None]  # [k, 1]
    done = imp.op(
        g.LessEqualOp(imp.op(g.ReshapeOp(through, shape=[1, pairs])), imp.constant(slots))
    )
    pair = imp.op(g.ReduceSumOp(imp.op(g.CastOp(done, to=str(i64))), axes=[1], keepdims=0))
    pair = imp.op(g.MinOp(pair, imp.constant(np.int64(pairs - 1))))  # in range past the total
    nth_of_pair = imp.op(
        g.SubOp(imp.constant(slots[:, 0]), imp.op(g.GatherOp(start, pair, axis=0)))
    )
    nth_of_pair = imp.op(g.MinOp(nth_of_pair, imp.constant(np.int64(per_class - 1))))
    where = imp.op(g.AddOp(imp.op(g.MulOp(pair, imp.constant(np.int64(per_class)))), nth_of_pair))
    box = imp.op(g.GatherOp(imp.op(g.ReshapeOp(table, shape=[bound])), where, axis=0))
    batch_class = np.stack(np.divmod(np.arange(pairs, dtype=np.int64), c), axis=1)  # [pairs, 2]
    rows_out = imp.op(
        g.ConcatOp(
            [
                imp.op(g.GatherOp(imp.constant(batch_class), pair, axis=0)),
                imp.op(g.ReshapeOp(box, shape=[bound, 1])),
            ],
            axis=1,
        )
    )
    valid = imp.op(g.LessOp(imp.constant(slots), total))
    return [imp.bounded(imp.op(g.WhereOp(valid, rows_out, zero)), 0, total)]
