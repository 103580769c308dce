"""TfIdfVectorizer (compiler/frontend/ops/tfidf_vectorizer.py): many attribute combinations,
each a node of one model so one compile covers them, run on random small-alphabet integer
inputs (so n-grams really occur, with every skip) and compared with onnx's reference
evaluator; every refused attribute value is a FrontendError naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model, onnxruntime_run

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64

# unigrams 0..3, bigrams (1,2) (2,2) (0,3) (1,2) again, trigrams (1,2,1) (3,3,3);
# 10 n-grams in all (ids 0..9)
POOL = [0, 1, 2, 3, 1, 2, 2, 2, 0, 3, 1, 2, 1, 2, 1, 3, 3, 3]
COUNTS = [0, 4, 12]
PERMUTED = [4, 0, 8, 2, 6, 1, 3, 9, 7, 5]
MERGED = [0, 1, 0, 2, 3, 3, 1, 2, 0, 1]  # several n-grams summed into one column
WEIGHTS = [0.5, 2.0, 1.5, 3.0, 0.25, 4.0, 1.0, 2.5, 0.75, 1.25]

CONFIGS: list[dict[str, Any]] = [
    dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=3),
    dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=0),
    dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=2),
    dict(mode="TF", min_gram_length=2, max_gram_length=2, max_skip_count=1),
    dict(mode="TF", min_gram_length=2, max_gram_length=3, max_skip_count=3, indexes=MERGED),
    dict(mode="TF", min_gram_length=3, max_gram_length=3, max_skip_count=4),
    dict(mode="IDF", min_gram_length=1, max_gram_length=2, max_skip_count=1),
    dict(mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=2),
    dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=1, counts=[0, 0, 6]),
    # trigrams longer than the 1-D input's windows with skip 9 reach: only skips that fit
    dict(mode="TF", min_gram_length=3, max_gram_length=3, max_skip_count=9),
    # more n-grams summed into one column than gathers assemble: a matmul does
    dict(
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=1,
        indexes=[0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
    ),
    # only unigrams in the pool, none in range: all zeros
    dict(mode="TF", min_gram_length=2, max_gram_length=3, max_skip_count=1, counts=[0]),
]


def tfidf(out: str, cfg: dict[str, Any], pool: list[int] = POOL, name: str = "tfidf"):
    cfg = dict(cfg)
    attrs = dict(
        pool_int64s=pool,
        ngram_counts=cfg.pop("counts", COUNTS),
        ngram_indexes=cfg.pop("indexes", PERMUTED),
        **cfg,
    )
    node = helper.make_node("TfIdfVectorizer", ["x"], [out], name=name, **attrs)
    if "weights" not in cfg:  # the reference evaluator needs the attribute, even empty
        node.attribute.append(
            helper.make_attribute("weights", [], attr_type=onnx.AttributeProto.FLOATS)
        )
    return node


def vectorizer_model(elem: int, shape: list[int], opset: int) -> onnx.ModelProto:
    nodes = [tfidf(f"y{k}", cfg, name=f"tfidf{k}") for k, cfg in enumerate(CONFIGS)]
    outputs = [(f"y{k}", F) for k in range(len(CONFIGS))]
    return graph_model(nodes, [("x", elem, shape)], outputs, opset=opset)


@pytest.mark.parametrize(
    "dtype, elem, shape, opset",
    [(np.int64, I64, [3, 9], 17), (np.int32, I32, [10], 9)],
)
def test_matches_the_reference_evaluator(dtype, elem, shape, opset):
    """Modes, weights, skips, gram-length ranges, repeated and merged n-grams, 2-D and 1-D
    input; opset 9 (the operator's only version) survives the upgrade to the frontend's
    opset."""
    model = vectorizer_model(elem, shape, opset)
    compiled = compile_model(model)
    reference = ReferenceEvaluator(model)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.integers(0, 4, shape).astype(dtype)
        ours = compiled.run({"x": x})
        expected = reference.run(None, {"x": x})
        assert any(np.any(e > 0) for e in expected)  # the inputs do hit the pool
        for k, want in enumerate(expected):
            got = ours[f"y{k}"]
            assert got.dtype == np.float32 and got.shape == want.shape, k
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"config {CONFIGS[k]}")


# weights scale the i-th pool n-gram (the specification, and onnxruntime), where the reference
# evaluator indexes them by output column: these run against onnxruntime, which refuses a pool
# with a repeated n-gram; a pool without one
DISTINCT_POOL = [0, 1, 2, 3, 1, 2, 2, 2, 0, 3, 3, 1, 1, 2, 1, 3, 3, 3]
WEIGHTED: list[dict[str, Any]] = [
    dict(mode="IDF", min_gram_length=1, max_gram_length=3, max_skip_count=1, weights=WEIGHTS),
    dict(mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=2, weights=WEIGHTS),
    dict(  # weighted n-grams summed into shared columns
        mode="TFIDF",
        min_gram_length=2,
        max_gram_length=3,
        max_skip_count=2,
        weights=WEIGHTS,
        indexes=MERGED,
    ),
    dict(  # and through the matmul
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=1,
        weights=WEIGHTS,
        indexes=[0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
    ),
]


def test_weights_scale_pool_ngrams_as_onnxruntime_does():
    nodes = [
        tfidf(f"y{k}", cfg, pool=DISTINCT_POOL, name=f"tfidf{k}") for k, cfg in enumerate(WEIGHTED)
    ]
    outputs = [(f"y{k}", F) for k in range(len(WEIGHTED))]
    model = graph_model(nodes, [("x", I64, [3, 9])], outputs, opset=17)
    compiled = compile_model(model)
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.integers(0, 4, (3, 9)).astype(np.int64)
        ours = compiled.run({"x": x})
        for k, want in enumerate(onnxruntime_run(model, {"x": x})):
            np.testing.assert_allclose(ours[f"y{k}"], want, rtol=1e-6, err_msg=f"{WEIGHTED[k]}")


def test_int32_input_ignores_pool_items_it_cannot_hold():
    """An n-gram with an item outside int32 never matches an int32 input (nor wraps onto one)."""
    big = 2**32 + 1  # wraps to 1 in int32
    pool = [1, big, 2, 1, 2]
    cfg = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0)
    node = tfidf("y", {**cfg, "counts": [0, 3], "indexes": [0, 1, 2, 3]}, pool=pool)
    model = graph_model([node], [("x", I32, [6])], [("y", F)], opset=17)
    x = np.int32([1, 2, 1, 1, 2, 0])
    ours = compile_model(model).run({"x": x})["y"]
    np.testing.assert_array_equal(ours, ReferenceEvaluator(model).run(None, {"x": x})[0])
    np.testing.assert_array_equal(ours, [3, 0, 2, 2])


def refused(node: onnx.NodeProto, elem: int = I64, shape: list[int] | None = None) -> str:
    model = graph_model(
        [node], [("x", elem, [2, 5] if shape is None else shape)], [("y", F)], opset=17
    )
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    assert "TfIdfVectorizer node 'tfidf'" in str(e.value)
    return str(e.value)


BASE = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(mode="BM25"), "mode 'BM25' is not one of TF, IDF, TFIDF"),
        (dict(min_gram_length=0), "1 <= min_gram_length <= max_gram_length"),
        (dict(min_gram_length=3), "1 <= min_gram_length <= max_gram_length"),
        (dict(max_skip_count=-1), "max_skip_count must be >= 0"),
        (dict(counts=[0, 20]), "ngram_counts [0, 20] must be nondecreasing"),
        (dict(counts=[4, 0]), "ngram_counts [4, 0] must be nondecreasing"),
        (dict(indexes=[0, 1, 2]), "ngram_indexes gives only 3 output columns"),
        (dict(indexes=[0, -1, 2, 3, 4, 5, 6, 7, 8, 9]), "must be nonempty and nonnegative"),
        (
            dict(mode="IDF", weights=[1.0, 2.0]),
            "weights has 2 values; it needs one per pool n-gram",
        ),
    ],
)
def test_bad_attributes_are_refused(change, message):
    assert message in refused(tfidf("y", {**BASE, **change}))


def test_string_pools_and_other_inputs_are_refused():
    strings = helper.make_node(
        "TfIdfVectorizer",
        ["x"],
        ["y"],
        name="tfidf",
        pool_strings=["a", "b"],
        ngram_counts=[0],
        ngram_indexes=[0, 1],
        **BASE,
    )
    assert "string n-grams (pool_strings) are not supported" in refused(strings)
    assert "must be [C] or [N, C], got shape [2, 2, 5]" in refused(
        tfidf("y", BASE), shape=[2, 2, 5]
    )
    assert "must be [C] or [N, C], got shape []" in refused(tfidf("y", BASE), shape=[])
    assert "input X must be int32 or int64, got element type f32" in refused(
        tfidf("y", BASE), elem=F
    )


def test_a_too_large_match_is_refused(monkeypatch):
    monkeypatch.setattr("compiler.frontend.importer.values.MAX_COMPOSED_ELEMENTS", 100)
    message = refused(tfidf("y", {**BASE, "max_skip_count": 2}))
    assert "needs an intermediate of" in message and "over the limit of 100" in message


def test_a_too_large_column_sum_is_refused(monkeypatch):
    monkeypatch.setattr("compiler.frontend.importer.values.MAX_COMPOSED_ELEMENTS", 50)
    cfg = dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0)
    node = tfidf("y", {**cfg, "counts": [0], "indexes": [0] * 50}, pool=list(range(50)))
    message = refused(node, shape=[1, 1])
    assert "summing 50 n-grams into 1 output columns" in message
    assert "needs a 51 x 1 matrix, over the limit of 50" in message
