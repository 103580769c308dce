"""Function expansion (compiler/frontend/function_expansion.py): an operator without a converter
is imported as its ONNX function body. FlexAttention (no converter; a context-dependent body that
inlines its score_mod/prob_mod graphs) against onnx's reference evaluator; default-domain
operators whose converters are removed for the test (Selu, MeanVarianceNormalization, HardSwish
calling HardSigmoid) against the evaluator; attribute references; converter precedence; and the
errors for an operator with neither a converter nor a body."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.function_expansion import _function, _opsets, _version, expand
from compiler.frontend.importer import CONVERTERS, Importer
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model

F = TensorProto.FLOAT
PREVIEW = "ai.onnx.preview"


def model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list[int]],
    outputs: list[str],
    opset: int = 26,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
    )
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(PREVIEW, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=11)


def check(m: onnx.ModelProto, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    feeds = {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for i in m.graph.input
    }
    got = compile_model(m).run(feeds)
    want = ReferenceEvaluator(m).run(None, feeds)
    for o, w in zip(m.graph.output, want, strict=True):
        assert got[o.name].shape == w.shape, o.name
        np.testing.assert_allclose(got[o.name], w, rtol=1e-5, atol=1e-5, err_msg=o.name)


def importer(m: onnx.ModelProto) -> Importer:
    """An importer with the model's inputs bound (for calling the expansion directly)."""
    imp = Importer(m, None)
    for i in m.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        imp.values[i.name] = np.zeros(shape, np.float32)
    imp.node, imp.label = m.graph.node[0], m.graph.node[0].name
    return imp


# -------------------------------------------------------------------------- FlexAttention


def _bias_graph() -> onnx.GraphProto:
    bias = numpy_helper.from_array(np.array(0.5, np.float32), "bias")
    return helper.make_graph(
        [helper.make_node("Add", ["scores", "bias"], ["scores_out"])],
        "score_mod",
        [helper.make_tensor_value_info("scores", F, None)],
        [helper.make_tensor_value_info("scores_out", F, None)],
        initializer=[bias],
    )


def _causal_graph() -> onnx.GraphProto:
    """score_mod masking k > q with -inf: Shape, Gather, Range inside the inlined graph."""
    c: dict[str, np.ndarray] = {
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "i2": np.array(2, np.int64),
        "i3": np.array(3, np.int64),
        "qs": np.array([1, 1, -1, 1], np.int64),
        "ks": np.array([1, 1, 1, -1], np.int64),
        "ninf": np.array(-np.inf, np.float32),
    }
    nodes = [
        helper.make_node("Shape", ["scores"], ["sh"]),
        helper.make_node("Gather", ["sh", "i2"], ["L"], axis=0),
        helper.make_node("Gather", ["sh", "i3"], ["S"], axis=0),
        helper.make_node("Range", ["zero", "L", "one"], ["qr"]),
        helper.make_node("Reshape", ["qr", "qs"], ["qi"]),
        helper.make_node("Range", ["zero", "S", "one"], ["kr"]),
        helper.make_node("Reshape", ["kr", "ks"], ["ki"]),
        helper.make_node("GreaterOrEqual", ["qi", "ki"], ["mask"]),
        helper.make_node("Where", ["mask", "scores", "ninf"], ["scores_out"]),
    ]
    return helper.make_graph(
        nodes,
        "causal",
        [helper.make_tensor_value_info("scores", F, None)],
        [helper.make_tensor_value_info("scores_out", F, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in c.items()],
    )


def _square_graph() -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Mul", ["p", "p"], ["p_out"])],
        "prob_mod",
        [helper.make_tensor_value_info("p", F, None)],
        [helper.make_tensor_value_info("p_out", F, None)],
    )


FLEX_CASES = {
    "plain": ({}, [2, 4, 8, 16], [2, 4, 6, 16], [2, 4, 6, 16]),
    "scale": ({"scale": 0.3}, [1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4]),
    "gqa_head_sizes": ({}, [1, 4, 3, 8], [1, 2, 5, 8], [1, 2, 5, 6]),
    "score_mod": ({"score_mod": _bias_graph()}, [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]),
    "causal": ({"score_mod": _causal_graph()}, [1, 2, 4, 8], [1, 2, 4, 8], [1, 2, 4, 8]),
    "prob_mod": (
        {"prob_mod": _square_graph(), "scale": 0.5},
        [1, 2, 3, 4],
        [1, 2, 3, 4],
        [1, 2, 3, 4],
    ),
}


@pytest.mark.parametrize("case", FLEX_CASES)
def test_flex_attention_is_expanded_and_matches_the_reference(case):
    attributes, q, k, v = FLEX_CASES[case]
    node = helper.make_node(
        "FlexAttention", ["Q", "K", "V"], ["Y"], name="fa", domain=PREVIEW, **attributes
    )
    check(model([node], {"Q": q, "K": k, "V": v}, ["Y"]))


def test_a_score_mod_reading_the_enclosing_graph_keeps_that_name():
    """The inlined score_mod reads a model input by name: it is not renamed (onnx's reference
    evaluator cannot run this one, so numpy is the reference)."""
    sm = helper.make_graph(
        [helper.make_node("Add", ["scores", "outer_bias"], ["scores_out"])],
        "sm",
        [helper.make_tensor_value_info("scores", F, None)],
        [helper.make_tensor_value_info("scores_out", F, None)],
    )
    node = helper.make_node(
        "FlexAttention", ["Q", "K", "V"], ["Y"], name="fa", domain=PREVIEW, score_mod=sm
    )
    shapes = {"Q": [1, 1, 2, 4], "K": [1, 1, 3, 4], "V": [1, 1, 3, 4], "outer_bias": [1, 1, 2, 3]}
    m = model([node], shapes, ["Y"])
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    got = compile_model(m).run(feeds)["Y"]
    q, k, v, b = feeds["Q"], feeds["K"], feeds["V"], feeds["outer_bias"]
    scores = q @ k.transpose(0, 1, 3, 2) / 2 + b
    p = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(got, p / p.sum(-1, keepdims=True) @ v, rtol=1e-5, atol=1e-6)


def test_flex_attention_body_runs_at_the_models_default_opset():
    """The preview body imports no default-domain opset: it runs at the model's."""
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], name="fa", domain=PREVIEW)
    m = model([node], {"Q": [1, 1, 2, 4], "K": [1, 1, 3, 4], "V": [1, 1, 3, 4]}, ["Y"], opset=24)
    imp = importer(m)
    found = _version(node, _opsets(imp))
    assert found is not None and found[1:] == (1, True)
    _, opsets = _function(imp, node, *found)
    assert opsets[""] == 24 and opsets[PREVIEW] == 1
    # its Shape nodes take start and end, which opset 13 lacks: refused, not misread
    m = model([node], {"Q": [1, 1, 2, 4], "K": [1, 1, 3, 4], "V": [1, 1, 3, 4]}, ["Y"], opset=13)
    with pytest.raises(FrontendError, match="uses Shape with attribute 'start', which opset 13"):
        import_onnx(m)


def test_an_inner_error_names_the_expanded_node():
    """A score_mod the body cannot import: the error names the node and its expansion."""
    bad = helper.make_graph(
        [helper.make_node("NoSuchOp", ["scores"], ["scores_out"], domain="com.example")],
        "bad",
        [helper.make_tensor_value_info("scores", F, None)],
        [helper.make_tensor_value_info("scores_out", F, None)],
    )
    node = helper.make_node(
        "FlexAttention", ["Q", "K", "V"], ["Y"], name="fa", domain=PREVIEW, score_mod=bad
    )
    m = model([node], {"Q": [1, 1, 2, 4], "K": [1, 1, 3, 4], "V": [1, 1, 3, 4]}, ["Y"])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(
        FrontendError, match=r"com\.example\.NoSuchOp \(node 'fa \(FlexAttention, expanded\)/"
    ):
        import_onnx(m)


# ------------------------------------------------- default-domain operators without a converter


def test_selu_without_converter_uses_the_schema_defaults(monkeypatch):
    """Selu's alpha and gamma omitted: the body's @alpha/@gamma take the schema's defaults."""
    monkeypatch.delitem(CONVERTERS, "Selu")
    check(model([helper.make_node("Selu", ["x"], ["y"], name="s")], {"x": [3, 5]}, ["y"]))
    node = helper.make_node("Selu", ["x"], ["y"], name="s", alpha=0.5)
    check(model([node], {"x": [3, 5]}, ["y"]), seed=1)


def test_attribute_references_resolve_to_node_then_default():
    m = model([helper.make_node("Selu", ["x"], ["y"], name="s", gamma=2.0)], {"x": [2]}, ["y"])
    nodes = expand(importer(m), m.graph.node[0])
    assert nodes is not None
    consts = {n.output[0]: n.attribute[0] for n in nodes if n.op_type == "Constant"}
    alpha = next(a for k, a in consts.items() if k.endswith(":Alpha"))
    gamma = next(a for k, a in consts.items() if k.endswith(":Gamma"))
    assert alpha.name == "value_float" and not alpha.ref_attr_name
    assert alpha.f == pytest.approx(1.67326319217681884765625)  # the schema's default
    assert gamma.f == 2.0  # the node's
    # formal input and output are the node's names; internal names carry the node's label
    assert nodes[-1].output[0] == "y" and "x" in {i for n in nodes for i in n.input}
    assert all(n.output[0] == "y" or n.output[0].startswith("s/Selu:") for n in nodes)


def test_a_reference_to_an_attribute_without_value_is_omitted():
    """Bernoulli's body passes @seed to RandomUniformLike: omitted when the node has none."""
    node = helper.make_node("Bernoulli", ["x"], ["y"], name="b")
    m = model([node], {"x": [2]}, ["y"])
    (uniform,) = [n for n in expand(importer(m), node) or [] if n.op_type == "RandomUniformLike"]
    assert "seed" not in {a.name for a in uniform.attribute}
    node = helper.make_node("Bernoulli", ["x"], ["y"], name="b", seed=3.0)
    m = model([node], {"x": [2]}, ["y"])
    (uniform,) = [n for n in expand(importer(m), node) or [] if n.op_type == "RandomUniformLike"]
    assert {a.name: a.f for a in uniform.attribute}["seed"] == 3.0


@pytest.mark.parametrize("opset", [13, 26])
def test_a_body_is_imported_under_its_own_opset(monkeypatch, opset):
    """MeanVarianceNormalization's body of opset 13 (ReduceMean axes an attribute) and of 18
    (axes an input, from Constant value_ints = @axes)."""
    monkeypatch.delitem(CONVERTERS, "MeanVarianceNormalization")
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], name="m", axes=[0, 2])
    m = model([node], {"x": [2, 3, 4]}, ["y"], opset=opset)
    imp = importer(m)
    found = _version(node, _opsets(imp))
    assert found is not None
    _, opsets = _function(imp, node, *found)
    assert opsets[""] == (13 if opset == 13 else 18)
    check(m)


def test_nested_function_calls_are_expanded(monkeypatch):
    """HardSwish's body calls HardSigmoid: with neither converter, both bodies are inlined."""
    monkeypatch.delitem(CONVERTERS, "HardSwish")
    monkeypatch.delitem(CONVERTERS, "HardSigmoid")
    check(model([helper.make_node("HardSwish", ["x"], ["y"], name="h")], {"x": [4, 6]}, ["y"]))


def test_a_converter_takes_precedence():
    m = model([helper.make_node("Selu", ["x"], ["y"], name="s")], {"x": [3, 5]}, ["y"])
    with_converter = len(list(import_onnx(m).walk()))
    saved = CONVERTERS.pop("Selu")
    try:
        expanded = len(list(import_onnx(m).walk()))
    finally:
        CONVERTERS["Selu"] = saved
    assert with_converter < expanded


# ------------------------------------------------------------------------------------ errors


def test_an_operator_with_neither_converter_nor_body_is_unsupported():
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="n", domain="com.example")
    m = model([node], {"x": [2]}, ["y"])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(
        FrontendError,
        match=r"unsupported ONNX operators \(opset 26\): com\.example\.NoSuchOp \(node 'n'\)",
    ):
        import_onnx(m)
    # Shrink's body exists from opset 18 only: an opset-13 model has none to expand
    saved = CONVERTERS.pop("Shrink")
    try:
        m = model([helper.make_node("Shrink", ["x"], ["y"], name="k")], {"x": [2]}, ["y"], 13)
        with pytest.raises(FrontendError, match=r"unsupported ONNX operators \(opset 13\): Shrink"):
            import_onnx(m)
    finally:
        CONVERTERS["Shrink"] = saved


def test_a_body_using_an_unsupported_operator_is_reported_with_the_others():
    """Bernoulli has a body, but its RandomUniformLike has no converter: Bernoulli itself is
    listed as unsupported, with the other unsupported nodes."""
    nodes = [
        helper.make_node("Bernoulli", ["x"], ["y"], name="b"),
        helper.make_node("NoSuchOp", ["x"], ["z"], name="n", domain="com.example"),
    ]
    m = model(nodes, {"x": [2]}, ["y", "z"])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(FrontendError) as e:
        import_onnx(m)
    assert str(e.value) == (
        "unsupported ONNX operators (opset 26): Bernoulli (node 'b'), "
        "com.example.NoSuchOp (node 'n')"
    )


def test_a_body_runs_under_its_own_opset_and_labels_its_nodes(monkeypatch):
    """Bernoulli's body imports opset 22: its nodes are converted at 22 in an opset-26 model,
    and an error names the node, its expansion and the inner node."""

    def random_uniform_like(imp: Importer, node: onnx.NodeProto) -> list:
        raise imp.error(f"converted at opset {imp.opset}")

    monkeypatch.setitem(CONVERTERS, "RandomUniformLike", random_uniform_like)
    m = model([helper.make_node("Bernoulli", ["x"], ["y"], name="b")], {"x": [2]}, ["y"])
    with pytest.raises(
        FrontendError,
        match=r"^RandomUniformLike node 'b \(Bernoulli, expanded\)/#0': converted at opset 22$",
    ):
        import_onnx(m)
