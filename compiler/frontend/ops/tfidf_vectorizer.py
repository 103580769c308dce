"""TfIdfVectorizer (integer n-grams) as a composition of graph ops.

Everything about the pool is static, so counting is a match of static windows of X against
constant n-grams: for each gram length n, one gather takes every window (skip d, start p) of
every row, one broadcast equality compares it item by item with every pool n-gram, and two sums
(over the n items, then over the windows) count the occurrences. The counts are then placed in
their output columns (ngram_indexes) and weighted by `mode`. The counting follows onnx's
reference implementation (onnx/reference/ops/op_tfidf_vectorizer.py), which onnxruntime
shares: unigrams count once (skip 0 only), n-grams of lengths outside
[min_gram_length, max_gram_length] are never counted, a repeated pool n-gram counts under its
last id. The weights follow the specification and onnxruntime: weights[i] scales the i-th pool
n-gram, before it is placed in its column (the reference evaluator indexes them by output column
instead, which differs where ngram_indexes is not the identity). Where several n-grams share a
column their weighted values add up.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    text,
)
from dialects import graph as g
from dialects.dense import numpy_dtype

MODES = ("TF", "IDF", "TFIDF")


def _pool_grams(
    imp: Importer, pool: list[int], counts: list[int], lo: int, hi: int
) -> dict[int, dict[tuple[int, ...], int]]:
    """Gram length -> {n-gram: its 0-based id}, for the lengths in [lo, hi]: ids number every
    n-gram of the pool in order (ngram_counts[i] starts the (i+1)-grams), and a repeated n-gram
    keeps its last id, as the reference's trie does."""
    if any(c < 0 or c > len(pool) for c in counts) or counts != sorted(counts):
        raise imp.error(
            f"ngram_counts {counts} must be nondecreasing start indexes into the pool of "
            f"{len(pool)} items"
        )
    grams: dict[int, dict[tuple[int, ...], int]] = {}
    next_id = 0
    for i, start in enumerate(counts):
        n = i + 1
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        k = (end - start) // n
        if lo <= n <= hi:
            level = grams.setdefault(n, {})
            for j in range(k):
                gram = tuple(pool[start + j * n : start + (j + 1) * n])
                level.pop(gram, None)  # the last id wins
                level[gram] = next_id + j
        next_id += k
    return grams


def _count(
    imp: Importer, x: SSAValue, n: int, grams: list[tuple[int, ...]], max_skip: int
) -> SSAValue | None:
    """[B, K] float32: how often each of the K pool n-grams occurs in each row of x [B, C], over
    every skip (0 only for unigrams) and start; None where no window fits in a row."""
    b, c = imp.shape_of(x)
    skips = [1] if n == 1 else range(1, max_skip + 2)
    windows = [[p + j * d for j in range(n)] for d in skips for p in range(c - (n - 1) * d)]
    if not windows:
        return None
    size = b * len(grams) * len(windows) * n
    imp.check_composed(
        size,
        f"matching {len(grams)} pool {n}-grams against {len(windows)} windows of {b} row(s) "
        f"needs an intermediate of {size} elements",
    )
    idx = imp.constant(np.asarray(windows, dtype=np.int64))
    items = imp.op(g.GatherOp(x, idx, axis=1))  # [B, W, n]
    items = imp.op(g.ReshapeOp(items, [b, 1, len(windows), n]))
    pool = imp.constant(np.asarray(grams).reshape(len(grams), 1, n), like=x)
    eq = imp.op(g.EqualOp(items, pool))  # [B, K, W, n]
    if n > 1:  # all n items match
        hits = imp.op(g.ReduceSumOp(imp.op(g.CastOp(eq, to="i32")), axes=[3], keepdims=0))
        eq = imp.op(g.EqualOp(hits, imp.constant(np.int32(n))))
        axes = [2]
    else:
        axes = [2, 3]
    return imp.op(g.ReduceSumOp(imp.op(g.CastOp(eq, to="f32")), axes=axes, keepdims=0))


MAX_GATHER_LAYERS = 4
"""Output columns that sum at most this many n-grams are assembled by that many gathers;
more (many n-grams merged into one column) by one matmul with a static 0/1 matrix."""


def _place(imp: Importer, found: list[SSAValue], columns: list[int], b: int, out: int) -> SSAValue:
    """[B, out]: column c sums the counts (the [B, K_n] blocks of `found`) of the n-grams that
    `columns` maps to c; columns no n-gram maps to are 0."""
    zero = len(columns)  # the index of an extra zero column
    freq_all = imp.op(
        g.ConcatOp([*found, imp.constant(np.zeros((b, 1), np.float32))], axis=1)
    )  # [B, K + 1]
    layers: list[list[int]] = []  # layer r gathers the r-th n-gram of each column
    for k, col in enumerate(columns):
        layer = next((s for s in layers if s[col] == zero), None)
        if layer is None:
            layer = [zero] * out
            layers.append(layer)
        layer[col] = k
    if len(layers) > MAX_GATHER_LAYERS:
        imp.check_composed(
            (zero + 1) * out,
            f"summing {zero} n-grams into {out} output columns (up to {len(layers)} per "
            f"column) needs a {zero + 1} x {out} matrix",
        )
        onehot = np.zeros((zero + 1, out), np.float32)
        onehot[np.arange(zero), columns] = 1.0
        return imp.op(g.MatmulOp(freq_all, imp.constant(onehot)))
    freq: SSAValue | None = None
    for layer in layers:
        taken = imp.op(g.GatherOp(freq_all, imp.constant(np.asarray(layer, np.int64)), axis=1))
        freq = taken if freq is None else imp.op(g.AddOp(freq, taken))
    assert freq is not None
    return freq


@converter("TfIdfVectorizer")
def convert_tfidf_vectorizer(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Y [O] or [B, O] float32 (O = max(ngram_indexes) + 1) from integer X [C] or [B, C]."""
    a = attrs(node)
    if a.get("pool_strings"):
        raise imp.error("string n-grams (pool_strings) are not supported: only integer input")
    x = imp.value(node.input[0])
    elem = element_type_of(x)
    if not isinstance(elem, IntegerType) or elem.width.data < 32:
        raise imp.error(f"input X must be int32 or int64, got element type {elem}")
    shape = imp.shape_of(x)
    if len(shape) not in (1, 2):
        raise imp.error(f"input X must be [C] or [N, C], got shape {list(shape)}")
    mode = text(a["mode"])
    if mode not in MODES:
        raise imp.error(f"mode '{mode}' is not one of {', '.join(MODES)}")
    lo, hi = int(a["min_gram_length"]), int(a["max_gram_length"])
    max_skip = int(a["max_skip_count"])
    if lo < 1 or hi < lo:
        raise imp.error(
            f"min_gram_length {lo} and max_gram_length {hi} must satisfy "
            "1 <= min_gram_length <= max_gram_length"
        )
    if max_skip < 0:
        raise imp.error(f"max_skip_count must be >= 0, got {max_skip}")
    pool = [int(v) for v in a.get("pool_int64s", [])]
    counts = [int(v) for v in a["ngram_counts"]]
    indexes = [int(v) for v in a["ngram_indexes"]]
    if not indexes or min(indexes) < 0:
        raise imp.error(f"ngram_indexes must be nonempty and nonnegative, got {indexes}")
    out = max(indexes) + 1
    weights = [float(v) for v in a.get("weights", [])]
    if mode != "TF" and weights and len(weights) != len(indexes):
        raise imp.error(
            f"weights has {len(weights)} values; it needs one per pool n-gram "
            f"({len(indexes)}, as ngram_indexes)"
        )
    levels = _pool_grams(imp, pool, counts, lo, hi)
    ids = [i for level in levels.values() for i in level.values()]
    if ids and max(ids) >= len(indexes):
        raise imp.error(
            f"the pool holds {max(ids) + 1} n-grams, but ngram_indexes gives only "
            f"{len(indexes)} output columns"
        )

    b = shape[0] if len(shape) == 2 else 1
    rows = x if len(shape) == 2 else imp.op(g.ReshapeOp(x, [1, shape[0]]))
    info = np.iinfo(numpy_dtype(elem))
    found: list[SSAValue] = []
    columns: list[int] = []  # the output column of each counted n-gram, in `found`'s order
    gram_ids: list[int] = []  # and its id (position in the pool)
    for n, level in sorted(levels.items()):
        # n-grams with an item that X's type cannot hold never match
        kept = [
            (gram, i) for gram, i in level.items() if info.min <= min(gram) <= max(gram) <= info.max
        ]
        counted = _count(imp, rows, n, [gram for gram, _ in kept], max_skip) if kept else None
        if counted is not None:
            found.append(counted)
            columns.extend(indexes[i] for _, i in kept)
            gram_ids.extend(i for _, i in kept)
    final_shape = [b, out] if len(shape) == 2 else [out]
    if not found:
        return [np.zeros(final_shape, np.float32)]

    if mode != "TF" and weights:  # each n-gram's count weighted before it is placed
        start = 0
        for k, counted in enumerate(found):
            n = imp.shape_of(counted)[1]
            w = imp.constant(
                np.asarray([weights[i] for i in gram_ids[start : start + n]], np.float32)
            )
            start += n
            if mode == "IDF":
                seen = imp.op(g.GreaterOp(counted, imp.scalar(0.0)))
                found[k] = imp.op(g.WhereOp(seen, w, imp.scalar(0.0)))
            else:
                found[k] = imp.op(g.MulOp(counted, w))
    y = _place(imp, found, columns, b, out)
    if mode == "IDF" and not weights:  # all-one weights: whether the column's n-grams occur
        y = imp.op(g.CastOp(imp.op(g.GreaterOp(y, imp.scalar(0.0))), to="f32"))
    if len(shape) < 2:
        y = imp.op(g.ReshapeOp(y, final_shape))
    return [y]
