"""Converters of the ai.onnx.ml (classical machine learning) operators the sklearn-onnx and
onnxmltools converters emit: Binarizer, ArrayFeatureExtractor, TreeEnsemble (opset 5) and
TreeEnsembleRegressor (opsets 1/3), composed of graph ops.

A tree ensemble is static (its nodes are attributes), so its evaluation is a fixed number of
table lookups: every tree's current position is an index into one table of all nodes and leaves
(leaves loop back onto themselves), and each of `depth` steps gathers the current node's feature,
bounds and branches, compares, and moves. Every comparison mode is turned at import time into
"x in [lo, hi]" (optionally negated) on float32, so a step costs the same whatever the modes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import Importer, Value, attrs, converter, element_type_of, text
from compiler.frontend.ops.scatter_gather import as_i64, runtime_index, static_index
from dialects import graph as g

F32_MAX = float(np.finfo(np.float32).max)


def _tensor_attr(node: onnx.NodeProto, name: str) -> np.ndarray | None:
    a = attrs(node).get(name)
    if a is None:
        return None
    return np.asarray(numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else a)


# ----------------------------------------------------------------------------- simple ones


@converter("ai.onnx.ml.Binarizer")
def convert_binarizer(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """1 where x > threshold, else 0, in x's type; for integer x the threshold becomes the
    integer below it (x > t <=> x > floor(t)), clamped into the type's range."""
    x = imp.value(node.input[0])
    t = float(attrs(node).get("threshold", 0.0))
    et = element_type_of(x)
    if et == f32:
        cmp = imp.op(g.GreaterOp(x, imp.scalar(t)))
    elif et in (i64, i32):
        info = np.iinfo(np.int64 if et == i64 else np.int32)
        if np.isnan(t) or t >= info.max:
            cmp = imp.op(g.GreaterOp(x, imp.constant(info.max, like=x)))  # never
        elif t < info.min:
            cmp = imp.op(g.GreaterEqualOp(x, imp.constant(info.min, like=x)))  # always
        else:
            cmp = imp.op(g.GreaterOp(x, imp.constant(int(np.floor(t)), like=x)))
    else:
        raise imp.error(f"input X has element type {et}; supported: float32, int64, int32")
    return [imp.op(g.CastOp(cmp, to=str(et)))]


@converter("ai.onnx.ml.ArrayFeatureExtractor")
def convert_array_feature_extractor(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """X[..., Y] with Y flattened (as onnxruntime and the reference do); a 1-D X gives one row
    ([1, len(Y)])."""
    xs = imp.shape(node.input[0])
    if not xs:
        raise imp.error("input X must have rank >= 1")
    c = xs[-1]
    ys = imp.shape(node.input[1])
    n = int(np.prod(ys))
    idx_c = imp.const(node.input[1])
    if idx_c is not None:
        norm = static_index(imp, idx_c.reshape(-1), c, f"indices ('{node.input[1]}')")
        idx = imp.constant(norm)
    else:
        y = as_i64(imp, imp.value(node.input[1]))
        if len(ys) != 1:
            y = imp.op(g.ReshapeOp(y, [n]))
        what = (
            f"{node.op_type} node '{imp.label}': an index of '{node.input[1]}' into the last "
            f"axis of '{node.input[0]}'"
        )
        idx = runtime_index(imp, y, c, what)
    out = imp.op(g.GatherOp(imp.value(node.input[0]), idx, axis=len(xs) - 1))
    if len(xs) == 1:
        out = imp.op(g.ReshapeOp(out, [1, n]))
    return [out]


# ----------------------------------------------------------------------------- tree ensembles

LEQ, LT, GTE, GT, EQ, NEQ, MEMBER = range(7)
AGGREGATES = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}
POST_TRANSFORMS = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}


def _le_bound(t: float) -> np.float32:
    """The largest float32 <= t (t a double): x <= t <=> x <= it, for float32 x."""
    with np.errstate(over="ignore"):  # beyond float32: inf, stepped back below
        r = np.float32(t)
    return np.nextafter(r, np.float32(-np.inf)) if float(r) > t else r


def _ge_bound(t: float) -> np.float32:
    """The smallest float32 >= t."""
    with np.errstate(over="ignore"):
        r = np.float32(t)
    return np.nextafter(r, np.float32(np.inf)) if float(r) < t else r


def _interval(mode: int, t: float) -> tuple[np.float32, np.float32, bool]:
    """(lo, hi, negate): the float32 x where the comparison holds are those with
    (lo <= x <= hi) != negate. NaN x is in no interval; a NaN t gives NaN bounds (never in),
    as every comparison with NaN is false (NEQ, negated, is true)."""
    inf, empty = np.float32(np.inf), (np.float32(np.inf), np.float32(-np.inf), False)
    if np.isnan(t):
        nan = np.float32(np.nan)
        return nan, nan, mode == NEQ
    if mode == LEQ:
        return -inf, _le_bound(t), False
    if mode == LT:
        hi = _le_bound(t)
        if float(hi) == t:
            if hi == -inf:
                return empty
            hi = np.nextafter(hi, -inf)
        return -inf, hi, False
    if mode == GTE:
        return _ge_bound(t), inf, False
    if mode == GT:
        lo = _ge_bound(t)
        if float(lo) == t:
            if lo == inf:
                return empty
            lo = np.nextafter(lo, inf)
        return lo, inf, False
    # EQ, NEQ: only a float32 value can equal a float32 x
    if float(_le_bound(t)) != t:
        return empty if mode == EQ else (empty[0], empty[1], True)
    return np.float32(t), np.float32(t), mode == NEQ


@dataclass
class Ensemble:
    """A tree ensemble in one table of positions: interior nodes 0..n-1, leaves after them.
    Per interior node: feature, mode, split (double), where NaN goes, member set, and the
    positions its branches lead to; per leaf, its (target, weight) contributions."""

    features: list[int] = field(default_factory=list)
    modes: list[int] = field(default_factory=list)
    splits: list[float] = field(default_factory=list)
    nan_true: list[bool] = field(default_factory=list)
    """Whether a NaN feature takes the true branch."""
    members: list[list[float]] = field(default_factory=list)
    true_next: list[int] = field(default_factory=list)
    false_next: list[int] = field(default_factory=list)
    leaves: list[list[tuple[int, float]]] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return len(self.features)


def _depth(imp: Importer, e: Ensemble) -> int:
    """The most interior nodes on a path from a root to a leaf; a cycle is an error."""
    n = e.n_nodes
    depth = [-1] * n  # -1 unknown, -2 on the current path
    for root in e.roots:
        stack = [(root, False)]
        while stack:
            p, done = stack.pop()
            if p >= n:
                continue
            if done:
                kids = [depth[q] if q < n else 0 for q in (e.true_next[p], e.false_next[p])]
                depth[p] = 1 + max(kids)
                continue
            if depth[p] >= 0:
                continue
            if depth[p] == -2:
                raise imp.error(f"the tree nodes form a cycle through node {p}")
            depth[p] = -2
            stack.append((p, True))
            stack.extend((q, False) for q in (e.true_next[p], e.false_next[p]))
    return max(depth[r] if r < n else 0 for r in e.roots)


def evaluate_ensemble(
    imp: Importer, x: SSAValue, e: Ensemble, n_targets: int, aggregate: str
) -> SSAValue:
    """Scores [batch, n_targets] of the float32 matrix x [batch, features]: every tree walked
    down `depth` steps at once, its leaf's contributions aggregated into their targets
    (AVERAGE, SUM: sum, over the trees, of weight / trees or weight; MIN, MAX: starting from
    the largest or smallest float32, which targets no leaf reaches keep, as the reference
    evaluator does; NaN weights are skipped, as its min/max do)."""
    b, nf = imp.shape_of(x)
    n, trees = e.n_nodes, len(e.roots)
    positions = n + len(e.leaves)
    steps = _depth(imp, e)

    lo = np.full(positions, np.inf, np.float32)
    hi = np.full(positions, -np.inf, np.float32)
    neg = np.zeros(positions, np.bool_)
    nan_true = np.zeros(positions, np.bool_)
    nan_true[:n] = e.nan_true
    k = max((len(m) for m, md in zip(e.members, e.modes, strict=True) if md == MEMBER), default=0)
    members = np.full((positions, max(k, 1)), np.nan, np.float32)
    for p in range(n):
        if e.modes[p] == MEMBER:
            exact = [v for v in e.members[p] if float(_le_bound(v)) == v]
            members[p, : len(exact)] = exact
        else:
            lo[p], hi[p], neg[p] = _interval(e.modes[p], e.splits[p])
    feats = np.zeros(positions, np.int64)
    feats[:n] = e.features
    here = np.arange(positions, dtype=np.int64)
    t_next, f_next = here.copy(), here.copy()
    t_next[:n], f_next[:n] = e.true_next, e.false_next

    xflat = imp.op(g.ReshapeOp(x, [b * nf]))
    row = imp.constant((np.arange(b, dtype=np.int64) * nf).reshape(b, 1))
    pos = imp.constant(np.broadcast_to(np.asarray(e.roots, np.int64), (b, trees)).copy())
    arrays: dict[str, np.ndarray] = dict(feat=feats, lo=lo, hi=hi, t=t_next, f=f_next)
    tables = {name: imp.constant(arr) for name, arr in arrays.items()}
    neg_t = imp.constant(neg) if neg.any() else None
    # NaN is in no interval nor set, so it goes where `neg` says unless told otherwise
    nan_t = imp.constant(nan_true) if (nan_true != neg).any() else None
    mem_t = imp.constant(members) if k else None
    for _ in range(steps):
        feat = imp.op(g.GatherOp(tables["feat"], pos, axis=0))
        xv = imp.op(g.GatherOp(xflat, imp.op(g.AddOp(feat, row)), axis=0))
        above = imp.op(g.GreaterEqualOp(xv, imp.op(g.GatherOp(tables["lo"], pos, axis=0))))
        below = imp.op(g.LessEqualOp(xv, imp.op(g.GatherOp(tables["hi"], pos, axis=0))))
        cond = imp.op(g.AndOp(above, below))
        if mem_t is not None:
            cand = imp.op(g.GatherOp(mem_t, pos, axis=0))  # [b, trees, k]
            hit = imp.op(g.EqualOp(cand, imp.op(g.ReshapeOp(xv, [b, trees, 1]))))
            hit = imp.op(g.ReduceMaxOp(hit, axes=[2], keepdims=0))
            cond = imp.op(g.OrOp(cond, hit))
        if neg_t is not None:
            cond = imp.op(g.XorOp(cond, imp.op(g.GatherOp(neg_t, pos, axis=0))))
        if nan_t is not None:
            isnan = imp.op(g.NotOp(imp.op(g.EqualOp(xv, xv))))
            cond = imp.op(g.WhereOp(isnan, imp.op(g.GatherOp(nan_t, pos, axis=0)), cond))
        t = imp.op(g.GatherOp(tables["t"], pos, axis=0))
        f = imp.op(g.GatherOp(tables["f"], pos, axis=0))
        pos = imp.op(g.WhereOp(cond, t, f))

    # per position, its contribution to each target; aggregated over the trees
    if aggregate in ("SUM", "AVERAGE"):
        contrib = np.zeros((positions, n_targets), np.float32)
        for j, leaf in enumerate(e.leaves):
            for tid, w in leaf:
                v = np.float32(w) / trees if aggregate == "AVERAGE" else np.float32(w)
                contrib[n + j, tid] += np.float32(v)
        got = imp.op(g.GatherOp(imp.constant(contrib), pos, axis=0))  # [b, trees, targets]
        return imp.op(g.ReduceSumOp(got, axes=[1], keepdims=0))
    # MIN as -max(-w): the table holds the weights (negated for MIN), absent ones the floor
    sign = -1.0 if aggregate == "MIN" else 1.0
    contrib = np.full((positions, n_targets), -F32_MAX, np.float32)
    for j, leaf in enumerate(e.leaves):
        for tid, w in leaf:
            if not np.isnan(w):
                contrib[n + j, tid] = max(contrib[n + j, tid], sign * np.float32(w))
    got = imp.op(g.GatherOp(imp.constant(contrib), pos, axis=0))
    best = imp.op(g.ReduceMaxOp(got, axes=[1], keepdims=0))
    best = imp.op(g.MaxOp(best, imp.scalar(-F32_MAX)))  # an infinite weight past the start
    return imp.op(g.NegOp(best)) if aggregate == "MIN" else best


def _float_matrix(imp: Importer, name: str) -> SSAValue:
    x = imp.value(name)
    if element_type_of(x) != f32:
        raise imp.error(f"input X has element type {element_type_of(x)}; supported: float32")
    if len(imp.shape_of(x)) != 2:
        raise imp.error(f"input X must be [batch, features], got shape {list(imp.shape_of(x))}")
    return x


@converter("ai.onnx.ml.TreeEnsemble")
def convert_tree_ensemble(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """ai.onnx.ml opset 5's TreeEnsemble. A tree whose root's branches both name the same leaf
    is that leaf (the specification; its leaf is the one those branches name). Set members
    are read in the order the MEMBER nodes appear in nodes_modes (the specification), each
    set ending at a NaN."""
    a = attrs(node)
    x = _float_matrix(imp, node.input[0])
    nf = imp.shape_of(x)[1]

    def ints(name: str) -> list[int]:
        return [int(v) for v in a.get(name, [])]

    def tensor(name: str) -> np.ndarray:
        v = _tensor_attr(node, name)
        return np.zeros(0) if v is None else v.reshape(-1)

    modes = [int(m) for m in tensor("nodes_modes")]
    n = len(modes)
    if n == 0:
        raise imp.error("the ensemble has no nodes (nodes_modes is empty)")
    splits = [float(s) for s in tensor("nodes_splits")]
    if len(splits) != n:
        raise imp.error(f"nodes_splits has {len(splits)} values; nodes_modes has {n}")
    cols: dict[str, list[int]] = {
        "nodes_featureids": ints("nodes_featureids"),
        "nodes_truenodeids": ints("nodes_truenodeids"),
        "nodes_trueleafs": ints("nodes_trueleafs"),
        "nodes_falsenodeids": ints("nodes_falsenodeids"),
        "nodes_falseleafs": ints("nodes_falseleafs"),
    }
    for name, col in cols.items():
        if len(col) != n:
            raise imp.error(f"{name} has {len(col)} values; nodes_modes has {n}")
    mtt = ints("nodes_missing_value_tracks_true") or [0] * n
    if len(mtt) != n:
        raise imp.error(f"nodes_missing_value_tracks_true has {len(mtt)} values; needs {n}")
    targets, weights = ints("leaf_targetids"), [float(w) for w in tensor("leaf_weights")]
    n_leaves = len(targets)
    if n_leaves == 0 or len(weights) != n_leaves:
        raise imp.error(
            f"leaf_targetids ({n_leaves}) and leaf_weights ({len(weights)}) must have the "
            "same nonzero length"
        )
    n_targets = int(a.get("n_targets", 0))
    if n_targets < 1:
        raise imp.error(f"n_targets must be >= 1, got {n_targets}")
    if bad := [t for t in targets if not 0 <= t < n_targets]:
        raise imp.error(f"leaf_targetids {bad[:4]} out of range [0, {n_targets})")
    if bad := [m for m in modes if not 0 <= m <= MEMBER]:
        raise imp.error(f"nodes_modes {bad[:4]} are not modes (0 BRANCH_LEQ .. 6 BRANCH_MEMBER)")
    if bad := [f for f in cols["nodes_featureids"] if not 0 <= f < nf]:
        raise imp.error(f"nodes_featureids {bad[:4]} out of range for X's {nf} features")
    roots = ints("tree_roots")
    if not roots or (bad := [r for r in roots if not 0 <= r < n]):
        raise imp.error(f"tree_roots must be nonempty node indices in [0, {n}), got {roots[:8]}")
    aggregate = AGGREGATES.get(int(a.get("aggregate_function", 1)))
    if aggregate is None:
        raise imp.error(
            f"aggregate_function {a['aggregate_function']} is not one of 0 AVERAGE, 1 SUM, "
            "2 MIN, 3 MAX"
        )
    post = int(a.get("post_transform", 0))
    if post != 0:
        name = POST_TRANSFORMS.get(post, str(post))
        raise imp.error(f"post_transform {name} is not supported (only 0, NONE)")

    # member sets, in the order of the MEMBER nodes, each ended by a NaN
    sets: list[list[float]] = [[] for _ in range(n)]
    n_member = modes.count(MEMBER)
    values = [float(v) for v in tensor("membership_values")]
    if n_member:
        if sum(np.isnan(v) for v in values) != n_member:
            raise imp.error(
                f"membership_values must hold one NaN-terminated set per BRANCH_MEMBER node "
                f"({n_member}), got {sum(np.isnan(v) for v in values)} NaNs"
            )
        it = iter(values)
        for p in range(n):
            if modes[p] == MEMBER:
                sets[p] = _take_set(it)

    e = Ensemble(
        features=cols["nodes_featureids"],
        modes=modes,
        splits=splits,
        # a comparison with NaN is false, NEQ's true; missing_value_tracks_true adds true
        nan_true=[bool(v) or m == NEQ for v, m in zip(mtt, modes, strict=True)],
        members=sets,
        leaves=[[(t, w)] for t, w in zip(targets, weights, strict=True)],
    )
    for branch, leafs, out in (
        ("nodes_truenodeids", "nodes_trueleafs", e.true_next),
        ("nodes_falsenodeids", "nodes_falseleafs", e.false_next),
    ):
        for p, (q, is_leaf) in enumerate(zip(cols[branch], cols[leafs], strict=True)):
            limit = n_leaves if is_leaf else n
            if not 0 <= q < limit:
                what = "leaf" if is_leaf else "node"
                raise imp.error(f"{branch}[{p}] = {q} is not a {what} index in [0, {limit})")
            out.append(n + q if is_leaf else q)
    e.roots = roots
    return [evaluate_ensemble(imp, x, e, n_targets, aggregate)]


def _take_set(it: Iterator[float]) -> list[float]:
    """The values up to the next NaN."""
    out: list[float] = []
    for v in it:
        if np.isnan(v):
            break
        out.append(v)
    return out


OLD_MODES = {"BRANCH_LEQ": LEQ, "BRANCH_LT": LT, "BRANCH_GTE": GTE, "BRANCH_GT": GT}
OLD_MODES |= {"BRANCH_EQ": EQ, "BRANCH_NEQ": NEQ}


def _floats(imp: Importer, node: onnx.NodeProto, name: str) -> list[float]:
    """A float list attribute or its `_as_tensor` twin (at most one of them)."""
    a = attrs(node)
    if name in a and f"{name}_as_tensor" in a:
        raise imp.error(f"{name} and {name}_as_tensor are both given")
    t = _tensor_attr(node, f"{name}_as_tensor")
    if t is not None:
        return [float(v) for v in t.reshape(-1)]
    return [float(v) for v in a.get(name, [])]


@converter("ai.onnx.ml.TreeEnsembleRegressor")
def convert_tree_ensemble_regressor(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """ai.onnx.ml opsets 1 and 3's regressor (what sklearn-onnx emits), as the reference
    evaluator computes it: each tree's root is its first node, a NaN feature goes where
    nodes_missing_value_tracks_true says (whatever the mode), a leaf adds every target weight
    naming it, AVERAGE divides by the number of trees, base_values are added last."""
    a = attrs(node)
    x = _float_matrix(imp, node.input[0])
    nf = imp.shape_of(x)[1]

    def ints(name: str) -> list[int]:
        return [int(v) for v in a.get(name, [])]

    tree_ids, node_ids = ints("nodes_treeids"), ints("nodes_nodeids")
    modes = [m.decode() if isinstance(m, bytes) else str(m) for m in a.get("nodes_modes", [])]
    n_all = len(modes)
    values = _floats(imp, node, "nodes_values") or [0.0] * n_all
    cols: dict[str, list[int]] = {
        "nodes_treeids": tree_ids,
        "nodes_nodeids": node_ids,
        "nodes_featureids": ints("nodes_featureids"),
        "nodes_truenodeids": ints("nodes_truenodeids"),
        "nodes_falsenodeids": ints("nodes_falsenodeids"),
        "nodes_missing_value_tracks_true": ints("nodes_missing_value_tracks_true") or [0] * n_all,
    }
    if n_all == 0:
        raise imp.error("the ensemble has no nodes (nodes_modes is empty)")
    lengths = {name: len(col) for name, col in cols.items()} | {"nodes_values": len(values)}
    for name, length in lengths.items():
        if length != n_all:
            raise imp.error(f"{name} has {length} values; nodes_modes has {n_all}")
    if bad := sorted({m for m in modes if m != "LEAF" and m not in OLD_MODES}):
        raise imp.error(f"nodes_modes {bad[:4]} are not supported ({', '.join(OLD_MODES)}, LEAF)")
    key = list(zip(tree_ids, node_ids, strict=True))
    if len(set(key)) != n_all:
        raise imp.error("a (nodes_treeids, nodes_nodeids) pair is given twice")
    # interior nodes first, then leaves, in the order given
    interior = [i for i in range(n_all) if modes[i] != "LEAF"]
    leaves = [i for i in range(n_all) if modes[i] == "LEAF"]
    position = {key[i]: p for p, i in enumerate(interior + leaves)}
    n = len(interior)
    n_targets = int(a.get("n_targets", 0))
    if n_targets < 1:
        raise imp.error(f"n_targets must be >= 1, got {n_targets}")
    aggregate = text(a.get("aggregate_function", "SUM"))
    if aggregate not in AGGREGATES.values():
        raise imp.error(f"aggregate_function '{aggregate}' is not one of AVERAGE, SUM, MIN, MAX")
    post = text(a.get("post_transform", "NONE"))
    if post != "NONE":
        raise imp.error(f"post_transform '{post}' is not supported (only NONE)")

    e = Ensemble(leaves=[[] for _ in leaves])
    for i in interior:
        f = cols["nodes_featureids"][i]
        if not 0 <= f < nf:
            raise imp.error(f"nodes_featureids[{i}] = {f} out of range for X's {nf} features")
        e.features.append(f)
        e.modes.append(OLD_MODES[modes[i]])
        e.splits.append(values[i])
        e.nan_true.append(cols["nodes_missing_value_tracks_true"][i] >= 1)
        e.members.append([])
        for branch, dest in (
            ("nodes_truenodeids", e.true_next),
            ("nodes_falsenodeids", e.false_next),
        ):
            target = (tree_ids[i], cols[branch][i])
            if target not in position:
                raise imp.error(f"{branch}[{i}] names node {target[1]}, not in tree {target[0]}")
            dest.append(position[target])
    roots: dict[int, int] = {}
    for i, t in enumerate(tree_ids):
        roots.setdefault(t, position[key[i]])
    e.roots = [roots[t] for t in sorted(roots)]

    t_tree, t_node, t_ids = ints("target_treeids"), ints("target_nodeids"), ints("target_ids")
    weights = _floats(imp, node, "target_weights")
    if not len(t_tree) == len(t_node) == len(t_ids) == len(weights):
        raise imp.error(
            "target_treeids, target_nodeids, target_ids and target_weights must have the "
            f"same length, got {len(t_tree)}, {len(t_node)}, {len(t_ids)}, {len(weights)}"
        )
    for tt, tn, tid, w in zip(t_tree, t_node, t_ids, weights, strict=True):
        p = position.get((tt, tn), -1)
        if p < n:
            raise imp.error(f"the target weight of tree {tt} node {tn} names no leaf")
        if not 0 <= tid < n_targets:
            raise imp.error(f"target_ids {tid} out of range [0, {n_targets})")
        e.leaves[p - n].append((tid, w))
    base = _floats(imp, node, "base_values")
    if base and len(base) != n_targets:
        raise imp.error(f"base_values has {len(base)} values; n_targets is {n_targets}")
    if n == 0:  # only leaves: every tree is its root leaf
        raise imp.error("every tree is a single leaf; ziggurat needs at least one split")
    out = evaluate_ensemble(imp, x, e, n_targets, aggregate)
    if base:
        out = imp.op(g.AddOp(out, imp.constant(np.asarray(base, np.float32))))
    return [out]
