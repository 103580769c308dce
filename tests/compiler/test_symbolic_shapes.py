"""compiler/frontend/symbolic_shapes.py: shapes over symbols checked against the shapes onnx
infers for the same model specialized; the limits a model puts on its symbols, and the errors
SymbolicModel gives for sizes beyond them before any compile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.loader import load_model_tests

from compiler.errors import InputError
from compiler.frontend.onnx_signature import SMALL_TENSOR_BYTES, graph_skeleton
from compiler.frontend.symbolic_shapes import Poly, analyze, symbol_dims
from compiler.symbolic_model import DimError, compile_symbolic
from tests.support.transformer_models import SMALL, build, specialized, with_cache

CONFIGS = [*SMALL.values(), *(with_cache(c) for c in SMALL.values() if c.decoder)]
SIZES = {"batch": 3, "seq": 5, "past": 4}


def test_polynomials() -> None:
    past, seq, batch = Poly.symbol("past"), Poly.symbol("seq"), Poly.symbol("batch")
    assert str(past + seq - 1) == "past + seq - 1"
    assert str(batch * seq * 64) == "64*batch*seq"
    assert (batch * seq * 768).exact_div(batch * seq * 12) == Poly.const(64)
    assert (batch * seq * 768).exact_div(past) is None
    assert (seq * 6 + 3).exact_div(3) == seq * 2 + 1
    assert (seq * 6 + 4).exact_div(3) is None
    assert (past + seq).evaluate({"past": 4, "seq": 5}) == 9
    assert (past + seq).evaluate({"seq": 5}) is None
    assert (seq - seq).constant == 0 and seq.constant is None


def test_dim_params_spelled_as_arithmetic_are_polynomials() -> None:
    inputs = [
        helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "past + seq"]),
        helper.make_tensor_value_info("k", TensorProto.FLOAT, ["batch", 2, "past", None]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a-b"]),  # not over symbols
    ]
    dims = symbol_dims(inputs, set())
    assert dims["mask"][1] == Poly.symbol("past") + Poly.symbol("seq")
    assert dims["k"][1:] == [Poly.const(2), Poly.symbol("past"), Poly.symbol("k.3")]
    assert dims["x"] == [Poly.symbol("a-b")]


def _check_against_onnx(model: onnx.ModelProto, shapes, sizes: dict[str, int]) -> int:
    """Each tensor whose shape onnx infers (with data propagation) for `model` has that shape
    in the analysis, evaluated at `sizes`; the count compared."""
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    compared = 0
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        dims = vi.type.tensor_type.shape.dim
        if not vi.type.tensor_type.HasField("shape") or any(
            not d.HasField("dim_value") for d in dims
        ):
            continue
        ours = shapes.shape(vi.name)
        assert ours is not None, vi.name
        assert [d.evaluate(sizes) for d in ours] == [d.dim_value for d in dims], vi.name
        compared += 1
    return compared


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.kind}{'-kv' if c.kv_cache else ''}")
def test_every_shape_matches_the_specialized_models(cfg) -> None:
    """Each tensor's symbolic shape, evaluated at the sizes, is the shape onnx infers for the
    model specialized to them; every tensor's shape is known."""
    model = build(cfg)
    shapes = analyze(model.graph)
    compared = _check_against_onnx(specialized(model, **SIZES), shapes, SIZES)
    assert compared > len(model.graph.node) // 2
    unknown = [o for n in model.graph.node for o in n.output[:1] if shapes.shape(o) is None]
    assert unknown == []


ZOO = sorted((Path(__file__).parents[1] / "data" / "model_zoo").glob("*.onnx"))


@pytest.mark.parametrize("path", ZOO, ids=lambda p: p.stem)
def test_exported_models_shapes(path: Path) -> None:
    """The torch exports of the model zoo (torchscript and dynamo, vision and text): every
    tensor's shape known and equal to onnx's."""
    model = onnx.load(path)
    shapes = analyze(model.graph)
    assert _check_against_onnx(model, shapes, {}) >= 40  # onnx infers fewer than we do
    unknown = [o for n in model.graph.node for o in n.output[:1] if shapes.shape(o) is None]
    assert unknown == []


def test_outputs_are_spelled_over_the_symbols() -> None:
    shapes = analyze(build(with_cache(SMALL["llama"])).graph)
    assert [str(d) for d in shapes.shape("logits")] == ["batch", "seq", "1000"]
    assert [str(d) for d in shapes.shape("present.0.key")] == ["batch", "2", "past + seq", "16"]


def test_inputs_read_as_indices_are_limited() -> None:
    shapes = analyze(build(with_cache(replace(SMALL["gpt2"], positions=32))).graph)
    assert [(lim.name, lim.extent) for lim in shapes.input_limits] == [
        ("input_ids", 1000),
        ("position_ids", 32),
    ]
    assert shapes.limits == []  # positions are data here, not shape
    llama = analyze(build(with_cache(SMALL["llama"])).graph)  # rotary: no table of positions
    assert [lim.name for lim in llama.input_limits] == ["input_ids"]


def test_learned_positions_limit_the_sequence() -> None:
    shapes = analyze(build(replace(SMALL["gpt2"], positions=32)).graph)
    (limit,) = shapes.limits
    assert (str(limit.expression), limit.bound) == ("seq - 1", 31)
    assert "Gather node '#11' reads index seq - 1 of 'embed_positions_" in limit.reason
    assert shapes.upper_bounds({})["seq"][0] == 32
    assert shapes.violated({"seq": 32, "batch": 1}) == []
    assert shapes.violated({"seq": 33, "batch": 1}) == [limit]


def _past_positions_model(rows: int = 16) -> onnx.ModelProto:
    """Positions Range(past, past + seq) read from a table of `rows`: past + seq <= rows."""
    table = numpy_helper.from_array(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2), "pe")
    axis2 = numpy_helper.from_array(np.array(2, np.int64), "two")
    axis1 = numpy_helper.from_array(np.array(1, np.int64), "one")
    step = numpy_helper.from_array(np.array(1, np.int64), "step")
    nodes = [
        helper.make_node("Shape", ["k"], ["ks"]),
        helper.make_node("Gather", ["ks", "two"], ["past"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "one"], ["seq"]),
        helper.make_node("Add", ["past", "seq"], ["total"]),
        helper.make_node("Range", ["past", "total", "step"], ["slots"]),
        helper.make_node("Gather", ["pe", "slots"], ["pos"], name="positions"),
        helper.make_node("Add", ["x", "pos"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "past_positions",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 2]),
            helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 1, "past", 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 2])],
        [table, axis2, axis1, step],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_limit_over_two_symbols_is_one_clear_error_before_any_compile() -> None:
    model = compile_symbolic(_past_positions_model())
    assert model.bounds["past"].hi == 16 and model.bounds["seq"].hi == 16
    with pytest.raises(InputError) as err:
        model.bind({"x": (1, 10, 2), "k": (1, 1, 7, 2)})
    assert str(err.value) == (
        "sizes past = 7, seq = 10 are beyond what the model allows, past + seq - 1 <= 15 (it "
        "is 16): Gather node 'positions' reads index past + seq - 1 of 'pe', whose axis 0 "
        "has 16"
    )
    assert model.compiles == 0
    x = np.ones((1, 9, 2), np.float32)
    out = model.run({"x": x, "k": np.zeros((1, 1, 7, 2), np.float32)})["y"]
    np.testing.assert_array_equal(out, x + np.arange(14, 32, dtype=np.float32).reshape(1, 9, 2))


def test_sizes_beyond_the_models_own_bound(tmp_path: Path) -> None:
    path = tmp_path / "gpt2.onnx"
    onnx.save(build(replace(SMALL["gpt2"], positions=32)), path)
    model = compile_symbolic(path)
    assert str(model.bounds["seq"]) == "0..32"
    ids = np.zeros((1, 33), np.int64)
    with pytest.raises(InputError, match=r"symbol 'seq' is 33 in input 'input_ids' \(axis 1\), "
                       r"outside the bounds 0..32 the model allows: Gather node '#11' reads "
                       r"index seq - 1 of 'embed_positions_\d+', whose axis 0 has 32$"):  # fmt: skip
        model.run({"input_ids": ids})
    assert model.compiles == 0
    for dims in ({"seq": (1, 64)}, {"seq": 40}):
        with pytest.raises(DimError, match=r"is beyond what the model allows, 'seq' <= 32: "):
            compile_symbolic(path, dims)
    assert str(compile_symbolic(path, {"seq": (1, 16)}).bounds["seq"]) == "1..16"


def test_the_skeleton_keeps_the_graph_and_drops_the_weights(tmp_path: Path) -> None:
    model = build(SMALL["gpt2"])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    skeleton = graph_skeleton(path)
    assert skeleton is not None
    assert list(skeleton.node) == list(model.graph.node)
    assert list(skeleton.input) == list(model.graph.input)
    for full, light in zip(model.graph.initializer, skeleton.initializer, strict=True):
        assert (light.name, list(light.dims), light.data_type) == (
            full.name,
            list(full.dims),
            full.data_type,
        )
        small = full.ByteSize() <= SMALL_TENSOR_BYTES
        assert (light == full) if small else not light.raw_data
    assert graph_skeleton(tmp_path / "missing.onnx") is None
    (tmp_path / "junk.onnx").write_bytes(b"\xff" * 64)
    assert graph_skeleton(tmp_path / "junk.onnx") is None


def test_values_in_external_files_are_not_read(tmp_path: Path) -> None:
    """A small integer initializer stored outside the model (a shape the analysis would use)
    is never opened by the analysis: its location is the model's word, checked by the import."""
    model = _past_positions_model()
    two = next(t for t in model.graph.initializer if t.name == "two")
    two.ClearField("raw_data")
    two.data_location = TensorProto.EXTERNAL
    entry = two.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    shapes = analyze(model.graph)
    assert shapes.values["two"].elements is None
    assert shapes.limits == []  # past is not known to be the second dim of k any more


def test_the_node_tests_declared_output_shapes() -> None:
    """Over ONNX's node tests, the analysis never fails (what it cannot follow is unknown) and
    every output shape it knows is the one the test declares."""
    checked = 0
    for case in load_model_tests(kind="node"):
        if not case.model:
            continue
        graph = case.model.graph
        shapes = analyze(graph)
        for out in graph.output:
            tt = out.type.tensor_type
            declared = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            ours = shapes.shape(out.name)
            if not tt.HasField("shape") or None in declared or ours is None:
                continue
            if all(d is not None and d.constant is not None for d in ours):
                assert [d.constant for d in ours] == declared, (case.name, out.name)  # type: ignore[union-attr]
                checked += 1
    assert checked > 500
