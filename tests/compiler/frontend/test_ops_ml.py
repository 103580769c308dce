"""The ai.onnx.ml operators (compiler/frontend/ops/ml.py): Binarizer, ArrayFeatureExtractor and
TreeEnsemble on random inputs and random trees (every mode, depths, aggregate functions, NaNs
with missing values going either way), against onnx's reference evaluator and onnxruntime;
every refused attribute value is a FrontendError naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.frontend.ops.ml import _interval
from compiler.model import compile_model
from tests.support.references import onnxruntime_run

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
ML = "ai.onnx.ml"


def ml_model(
    nodes: list[onnx.NodeProto],
    inputs: list[tuple[str, int, Any]],
    outputs: list[tuple[str, int]],
    ml_opset: int = 5,
) -> onnx.ModelProto:
    """A model importing both the default domain and ai.onnx.ml."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(ML, ml_opset)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def check(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    ort: bool = True,
    compiled: Any = None,
) -> None:
    """Ours against the reference evaluator and (with `ort`) onnxruntime."""
    ours = (compiled or compile_model(model)).run(feeds)
    refs = [ReferenceEvaluator(model).run(None, feeds)]
    if ort:
        refs.append(onnxruntime_run(model, feeds))
    big = np.finfo(np.float32).max
    for r, want_all in enumerate(refs):
        for out, want in zip(model.graph.output, want_all, strict=True):
            got = ours[out.name]
            if r == 1 and got.dtype == np.float32:
                # onnxruntime's MIN and MAX leave a target no leaf reaches at 0, the
                # reference evaluator (and ziggurat) at their start, +-float32 max
                got = np.where(np.abs(got) == big, np.float32(0), got)
            assert got.dtype == want.dtype and got.shape == want.shape, out.name
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=out.name)


# ----------------------------------------------------------------------------- Binarizer


@pytest.mark.parametrize("elem, dtype", [(F, np.float32), (I64, np.int64), (I32, np.int32)])
def test_binarizer(elem, dtype):
    thresholds = [0.0, 1.0, -1.5, 2.5, 1e30, -1e30]
    nodes = [
        helper.make_node("Binarizer", ["x"], [f"y{k}"], domain=ML, threshold=t)
        for k, t in enumerate(thresholds)
    ]
    outs = [(f"y{k}", elem) for k in range(len(thresholds))]
    model = ml_model(nodes, [("x", elem, [3, 4, 5])], outs, ml_opset=1)
    x = np.random.default_rng(1).integers(-4, 5, (3, 4, 5)).astype(dtype)
    if dtype == np.float32:
        x = x / np.float32(2)
    check(model, {"x": x}, ort=dtype == np.float32)  # onnxruntime's takes floats only


# ----------------------------------------------------------------------------- ArrayFeatureExtractor


@pytest.mark.parametrize(
    "shape, indices",
    [
        ([3, 4], [0, 3, 1]),
        ([2, 3, 5], [[4, 0], [2, 2]]),  # 2-D indices are flattened
        ([6], [5, 0, 2]),  # 1-D X: one row
        ([2, 4], [[1]]),
    ],
)
def test_array_feature_extractor(shape, indices):
    idx = np.int64(indices)
    node_c = helper.make_node("ArrayFeatureExtractor", ["x", "c"], ["yc"], domain=ML)
    node_r = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["yr"], domain=ML)
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(idx))
    model = ml_model(
        [const, node_c, node_r],
        [("x", F, shape), ("i", I64, list(idx.shape))],
        [("yc", F), ("yr", F)],
        ml_opset=1,
    )
    x = np.random.default_rng(2).normal(size=shape).astype(np.float32)
    check(model, {"x": x, "i": idx})


def test_array_feature_extractor_int64_data_and_bad_indices():
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain=ML)
    model = ml_model([node], [("x", I64, [2, 3]), ("i", I64, [2])], [("y", I64)], ml_opset=1)
    check(model, {"x": np.arange(6, dtype=np.int64).reshape(2, 3), "i": np.int64([2, 0])})
    bad = ml_model(
        [
            helper.make_node(
                "Constant", [], ["c"], value=numpy_helper.from_array(np.int64([0, 3]))
            ),
            helper.make_node("ArrayFeatureExtractor", ["x", "c"], ["y"], domain=ML, name="afe"),
        ],
        [("x", F, [2, 3])],
        [("y", F)],
        ml_opset=1,
    )
    with pytest.raises(FrontendError, match=r"ArrayFeatureExtractor node 'afe'.*out of range"):
        import_onnx(bad)


# ----------------------------------------------------------------------------- TreeEnsemble


def random_ensemble(
    rng: np.random.Generator, trees: int, depth: int, features: int, targets: int
) -> dict[str, Any]:
    """Random trees, nodes numbered in preorder (true branch first: the order in which the
    reference evaluator reads set members), splits and members on the half-integer grid the
    inputs are drawn from, so equalities happen; integer members (onnxruntime's only kind),
    never 0 (the reference evaluator ends a set at a 0.0)."""
    cols: dict[str, list[Any]] = {
        k: [] for k in ("feat", "split", "mode", "tn", "tl", "fn", "fl", "mtt")
    }
    members: list[float] = []
    leaf_t: list[int] = []
    leaf_w: list[float] = []

    def leaf() -> int:
        leaf_t.append(int(rng.integers(targets)))
        leaf_w.append(round(float(rng.normal()), 2))
        return len(leaf_t) - 1

    def build(level: int) -> int:
        i = len(cols["mode"])
        mode = int(rng.integers(7))
        cols["mode"].append(mode)
        cols["feat"].append(int(rng.integers(features)))
        cols["split"].append(float(rng.integers(-3, 4)) / 2)
        cols["mtt"].append(int(rng.integers(2)))
        if mode == 6:
            k = int(rng.integers(1, 4))
            members.extend({float(v) * rng.choice([-1, 1]) for v in rng.integers(1, 3, k)})
            members.append(np.nan)
        for key in ("tn", "tl", "fn", "fl"):
            cols[key].append(0)
        for side in "tf":
            is_leaf = level + 1 >= depth or rng.random() < 0.25
            cols[side + "l"][i] = int(is_leaf)
            cols[side + "n"][i] = leaf() if is_leaf else build(level + 1)
        return i

    roots = [build(0) for _ in range(trees)]
    attrs: dict[str, Any] = dict(
        nodes_featureids=cols["feat"],
        nodes_splits=numpy_helper.from_array(np.array(cols["split"], np.float32)),
        nodes_modes=numpy_helper.from_array(np.array(cols["mode"], np.uint8)),
        nodes_truenodeids=cols["tn"],
        nodes_trueleafs=cols["tl"],
        nodes_falsenodeids=cols["fn"],
        nodes_falseleafs=cols["fl"],
        nodes_missing_value_tracks_true=cols["mtt"],
        leaf_targetids=leaf_t,
        leaf_weights=numpy_helper.from_array(np.array(leaf_w, np.float32)),
        tree_roots=roots,
        n_targets=targets,
    )
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, np.float32))
    return attrs


def tree_ensemble(out: str, name: str = "te", **attrs: Any) -> onnx.NodeProto:
    return helper.make_node("TreeEnsemble", ["x"], [out], name=name, domain=ML, **attrs)


def grid_input(rng: np.random.Generator, shape: tuple[int, int], step: float) -> np.ndarray:
    x = (rng.integers(-3, 4, shape) * step).astype(np.float32)
    x[rng.random(shape) < 0.15] = np.nan
    return x


def test_random_tree_ensembles():
    """Every aggregate function, one to four targets, depths 1 to 6, all modes; against the
    reference evaluator on half-integer inputs, and onnxruntime too on integer ones (its set
    membership truncates the input to an integer first)."""
    rng = np.random.default_rng(0)
    configs = [  # (trees, depth, targets, aggregate)
        (6, 4, 3, 1),
        (5, 5, 2, 0),
        (4, 4, 3, 2),
        (7, 3, 4, 3),
        (1, 1, 1, 1),
    ]
    nodes = [
        tree_ensemble(
            f"y{k}", name=f"te{k}", aggregate_function=agg, **random_ensemble(rng, t, d, 5, n)
        )
        for k, (t, d, n, agg) in enumerate(configs)
    ]
    model = ml_model(nodes, [("x", F, [32, 5])], [(f"y{k}", F) for k in range(len(configs))])
    compiled = compile_model(model)
    check(model, {"x": grid_input(rng, (32, 5), 0.5)}, ort=False, compiled=compiled)
    check(model, {"x": grid_input(rng, (32, 5), 1.0)}, compiled=compiled)


def leaf_tree_attrs() -> dict[str, Any]:
    """Tree 0 is a single leaf (its root's branches both name leaf 1); tree 1 splits x[1]."""
    return dict(
        nodes_featureids=[0, 1],
        nodes_splits=numpy_helper.from_array(np.array([0.0, 0.5], np.float32)),
        nodes_modes=numpy_helper.from_array(np.array([0, 1], np.uint8)),
        nodes_truenodeids=[1, 0],
        nodes_trueleafs=[1, 1],
        nodes_falsenodeids=[1, 2],
        nodes_falseleafs=[1, 1],
        leaf_targetids=[0, 0, 0],
        leaf_weights=numpy_helper.from_array(np.array([10.0, 20.0, 30.0], np.float32)),
        tree_roots=[0, 1],
        n_targets=1,
    )


def test_single_leaf_tree_follows_the_specification():
    """The leaf named by the root's branches, as the specification says and onnxruntime does
    (the reference evaluator takes leaf_weights[root index] instead)."""
    model = ml_model([tree_ensemble("y", **leaf_tree_attrs())], [("x", F, [4, 2])], [("y", F)])
    x = np.float32([[0, 0.5], [0, 0.25], [0, 1], [0, np.nan]])
    ours = compile_model(model).run({"x": x})["y"]
    np.testing.assert_array_equal(ours, onnxruntime_run(model, {"x": x})[0])
    np.testing.assert_array_equal(ours.ravel(), [50, 30, 50, 50])


def test_min_max_keep_the_extremes_for_unreached_targets():
    """A target no leaf reaches keeps MIN's start (the largest float32) and MAX's (the
    smallest), as in the reference evaluator."""
    attrs = leaf_tree_attrs()
    attrs["n_targets"] = 2
    nodes = [
        tree_ensemble("lo", name="a", aggregate_function=2, **attrs),
        tree_ensemble("hi", name="b", aggregate_function=3, **attrs),
    ]
    model = ml_model(nodes, [("x", F, [2, 2])], [("lo", F), ("hi", F)])
    x = np.float32([[0, 0.25], [0, 2]])
    ours = compile_model(model).run({"x": x})
    big = np.finfo(np.float32).max
    np.testing.assert_array_equal(ours["lo"], [[10, big], [20, big]])
    np.testing.assert_array_equal(ours["hi"], [[20, -big], [30, -big]])


def test_double_splits_round_toward_the_comparison():
    """A double split compares with float32 inputs as in double precision."""
    split = 0.1  # between two float32 values
    xs = np.float32([np.nextafter(np.float32(split), np.float32(-1)), np.float32(split)])
    xs = np.concatenate([xs, np.float32([-np.inf, np.inf, 0.5, -0.5])])
    specials = [0.1, -0.3, 1e40, -1e40, np.inf, -np.inf, 0.5, float(np.float32(0.7))]
    ops = [np.less_equal, np.less, np.greater_equal, np.greater, np.equal, np.not_equal]
    for mode, op in enumerate(ops):
        for t in specials:
            lo, hi, negate = _interval(mode, t)
            got = ((xs >= lo) & (xs <= hi)) != negate
            np.testing.assert_array_equal(got, op(xs.astype(np.float64), t), f"{mode} {t}")


def refused(**change: Any) -> str:
    attrs = {**leaf_tree_attrs(), **change}
    model = ml_model([tree_ensemble("y", **attrs)], [("x", F, [2, 2])], [("y", F)])
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    assert "TreeEnsemble node 'te'" in str(e.value)
    return str(e.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(post_transform=1), "post_transform SOFTMAX is not supported"),
        (dict(aggregate_function=7), "aggregate_function 7 is not one of"),
        (dict(nodes_featureids=[0, 2]), "nodes_featureids [2] out of range"),
        (dict(leaf_targetids=[0, 1, 0]), "leaf_targetids [1] out of range [0, 1)"),
        (dict(tree_roots=[5]), "tree_roots must be nonempty node indices in [0, 2), got [5]"),
        (dict(nodes_falsenodeids=[1, 3]), "nodes_falsenodeids[1] = 3 is not a leaf index"),
        (
            dict(nodes_modes=numpy_helper.from_array(np.array([0, 6], np.uint8))),
            "one NaN-terminated set per BRANCH_MEMBER node (1), got 0 NaNs",
        ),
        (
            dict(nodes_modes=numpy_helper.from_array(np.array([0, 9], np.uint8))),
            "[9] are not modes",
        ),
        (
            dict(nodes_truenodeids=[1, 1], nodes_trueleafs=[1, 0], tree_roots=[1]),
            "the tree nodes form a cycle through node 1",
        ),
        (dict(nodes_trueleafs=[1]), "nodes_trueleafs has 1 values; nodes_modes has 2"),
    ],
)
def test_bad_attributes_are_refused(change, message):
    assert message in refused(**change)


def test_integer_input_is_refused():
    model = ml_model([tree_ensemble("y", **leaf_tree_attrs())], [("x", I64, [2, 2])], [("y", F)])
    with pytest.raises(FrontendError, match="input X has element type i64; supported: float32"):
        import_onnx(model)


# ----------------------------------------------------------------------------- TreeEnsembleRegressor

OLD_MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_regressor(
    rng: np.random.Generator, trees: int, depth: int, features: int, targets: int
) -> dict[str, Any]:
    """TreeEnsembleRegressor attributes (ai.onnx.ml opset 1's form): per tree, node ids in
    preorder; every leaf weighs every target (in a random order), as onnxruntime leaves a
    target no leaf reaches at 0 and the reference evaluator at its start value."""
    cols: dict[str, list[Any]] = {
        k: [] for k in ("tree", "id", "mode", "feat", "value", "tn", "fn", "mtt")
    }
    tgt: dict[str, list[Any]] = {k: [] for k in ("tree", "node", "id", "w")}

    def build(tree: int, level: int, counter: list[int]) -> int:
        nid = counter[0]
        counter[0] += 1
        i = len(cols["id"])
        leaf = level >= depth or (level > 0 and rng.random() < 0.25)
        cols["tree"].append(tree)
        cols["id"].append(nid)
        cols["mode"].append("LEAF" if leaf else OLD_MODES[int(rng.integers(6))])
        cols["feat"].append(0 if leaf else int(rng.integers(features)))
        cols["value"].append(0.0 if leaf else float(rng.integers(-3, 4)) / 2)
        cols["mtt"].append(0 if leaf else int(rng.integers(2)))
        cols["tn"].append(0)
        cols["fn"].append(0)
        if leaf:
            for t in rng.permutation(targets):
                tgt["tree"].append(tree)
                tgt["node"].append(nid)
                tgt["id"].append(int(t))
                tgt["w"].append(round(float(rng.normal()), 2))
        else:
            cols["tn"][i] = build(tree, level + 1, counter)
            cols["fn"][i] = build(tree, level + 1, counter)
        return nid

    for t in range(trees):
        build(t, 0, [0])
    return dict(
        nodes_treeids=cols["tree"],
        nodes_nodeids=cols["id"],
        nodes_modes=cols["mode"],
        nodes_featureids=cols["feat"],
        nodes_values=cols["value"],
        nodes_truenodeids=cols["tn"],
        nodes_falsenodeids=cols["fn"],
        nodes_missing_value_tracks_true=cols["mtt"],
        target_treeids=tgt["tree"],
        target_nodeids=tgt["node"],
        target_ids=tgt["id"],
        target_weights=tgt["w"],
        n_targets=targets,
    )


def test_random_tree_ensemble_regressors():
    """Every aggregate function, base values, several targets per leaf; against the
    reference evaluator, and onnxruntime without NaNs (a NaN goes where
    nodes_missing_value_tracks_true says in the reference evaluator whatever the mode,
    onnxruntime takes NEQ's true branch)."""
    rng = np.random.default_rng(3)
    configs = [(5, 4, 3, "SUM", [0.5, -1.0, 2.0]), (4, 3, 2, "AVERAGE", None)]
    configs += [(3, 3, 2, "MIN", None), (4, 2, 1, "MAX", [1.5])]
    nodes = []
    for k, (t, d, n, agg, base) in enumerate(configs):
        extra = {} if base is None else {"base_values": base}
        attrs = random_regressor(rng, t, d, 4, n)
        nodes.append(
            helper.make_node(
                "TreeEnsembleRegressor",
                ["x"],
                [f"y{k}"],
                domain=ML,
                aggregate_function=agg,
                **attrs,
                **extra,
            )
        )
    model = ml_model(nodes, [("x", F, [32, 4])], [(f"y{k}", F) for k in range(4)], ml_opset=3)
    compiled = compile_model(model)
    check(model, {"x": grid_input(rng, (32, 4), 0.5)}, ort=False, compiled=compiled)
    x = (rng.integers(-3, 4, (32, 4)) * 0.5).astype(np.float32)
    check(model, {"x": x}, compiled=compiled)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(post_transform="SOFTMAX"), "post_transform 'SOFTMAX' is not supported"),
        (dict(aggregate_function="MEDIAN"), "aggregate_function 'MEDIAN' is not one of"),
        (dict(nodes_modes=["BRANCH_MEMBER", "LEAF", "LEAF"]), "['BRANCH_MEMBER'] are not"),
        (dict(nodes_truenodeids=[7, 0, 0]), "nodes_truenodeids[0] names node 7, not in tree 0"),
        (dict(target_nodeids=[0, 2]), "the target weight of tree 0 node 0 names no leaf"),
        (dict(base_values=[1.0, 2.0]), "base_values has 2 values; n_targets is 1"),
    ],
)
def test_bad_regressor_attributes_are_refused(change, message):
    attrs: dict[str, Any] = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_featureids=[0, 0, 0],
        nodes_values=[0.5, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0],
        target_nodeids=[1, 2],
        target_ids=[0, 0],
        target_weights=[1.0, 2.0],
        n_targets=1,
    )
    node = helper.make_node(
        "TreeEnsembleRegressor", ["x"], ["y"], name="ter", domain=ML, **{**attrs, **change}
    )
    model = ml_model([node], [("x", F, [2, 2])], [("y", F)], ml_opset=3)
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    assert "TreeEnsembleRegressor node 'ter'" in str(e.value)
    assert message in str(e.value)
