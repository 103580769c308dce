"""Indices that the caller's inputs decide (token ids into an embedding) are checked when the
model runs: the gather kernel clamps them, which reads in bounds but is not the model's result,
so a run with one outside [-E, E) is one InputError naming the node, the indices, the table and
the index, as onnxruntime refuses it; from Python, from a saved package and from the C API."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.backends.gpu.opencl_runtime import opencl_available
from compiler.errors import InputError
from compiler.model import compile_model
from compiler.package.c_library import export_shared_library
from compiler.package.format import spec_from_json, spec_to_json
from compiler.package.loader import load_package
from compiler.package.writer import save_package
from compiler.tensor_spec import TensorSpec
from tests.compiler.package.test_c_api import GCC, build_program
from tests.support import transformer_models as tm
from tests.support.references import onnxruntime_run

TABLE = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
MESSAGE = "Gather node 'embed': an index of 'ids' into axis 0 of 'table' is {}, outside [-32, 32)"


def _embedding(n: int = 3, dtype: int = TensorProto.INT64) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
        "embedding",
        [helper.make_tensor_value_info("ids", dtype, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, 4])],
        [numpy_helper.from_array(TABLE, "table")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def embedding():
    return compile_model(_embedding())


def test_indices_in_range_read_their_rows(embedding) -> None:
    for ids in ([0, 5, 31], [-1, -32, 7]):
        out = embedding.run({"ids": np.array(ids, np.int64)})
        np.testing.assert_array_equal(out["y"], TABLE[ids])
    assert embedding.output_names == ["y"]
    (check,) = [s for s in embedding.outputs if s.hidden]
    assert (check.index_check, check.index_extent) == (MESSAGE.split(" is ")[0], 32)


@pytest.mark.parametrize("bad", [32, 1_000_000, 2**63 - 1, -33, -(2**63)])
def test_an_index_out_of_range_is_one_clear_error(embedding, bad: int) -> None:
    with pytest.raises(InputError) as err:
        embedding.run({"ids": np.array([0, bad, 1], np.int64)})
    assert str(err.value) == MESSAGE.format(bad)


def test_int32_indices_and_none_at_all() -> None:
    model = compile_model(_embedding(dtype=TensorProto.INT32))
    with pytest.raises(InputError, match=r"is 40, outside \[-32, 32\)$"):
        model.run({"ids": np.array([40, 0, 0], np.int32)})
    empty = compile_model(_embedding(n=0))
    assert empty.run({"ids": np.zeros(0, np.int64)})["y"].shape == (0, 4)


def test_constant_indices_need_no_check() -> None:
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"])],
        "constant_ids",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(TABLE, "table"), numpy_helper.from_array(np.array([3, 1]), "ids")],
    )
    model = compile_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert not [s for s in model.outputs if s.hidden]


def test_a_token_id_beyond_the_vocabulary() -> None:
    cfg = tm.SMALL["gpt2"]
    model = compile_model(tm.specialized(tm.build(cfg), batch=1, seq=4))
    ids = np.array([[1, 2, cfg.vocab, 3]], np.int64)
    with pytest.raises(InputError, match=rf"an index of 'input_ids' into axis 0 of "
                       rf"'embed_tokens_\d+' is {cfg.vocab}, outside \[-{cfg.vocab}, {cfg.vocab}\)$"):  # fmt: skip
        model.run({"input_ids": ids})


def test_a_saved_package_checks_too(embedding, tmp_path: Path) -> None:
    path = tmp_path / "embedding.zpkg"
    save_package(embedding, path)
    loaded = load_package(path)
    np.testing.assert_array_equal(loaded.run({"ids": np.array([2, 3, 4])})["y"], TABLE[[2, 3, 4]])
    with pytest.raises(InputError) as err:
        loaded.run({"ids": np.array([2, 99, 4])})
    assert str(err.value) == MESSAGE.format(99)


def test_the_manifest_entry_round_trips_and_a_bad_one_is_refused() -> None:
    spec = TensorSpec("c", (2,), np.dtype("int64"), index_check="what", index_extent=7)
    assert spec_from_json(spec_to_json(spec)) == spec
    for bad in ({"index_extent": -1}, {"index_extent": "7"}, {"shape": [3]}):
        with pytest.raises(ValueError, match="bad index check"):
            spec_from_json({**spec_to_json(spec), **bad})


@pytest.mark.skipif(GCC is None, reason="the C API test compiles a C program with gcc")
def test_the_c_api_refuses_the_run(embedding, tmp_path: Path) -> None:
    library = export_shared_library(embedding, tmp_path / "lib")
    exe = build_program(library, tmp_path)
    np.array([1, 2, 3], np.int64).tofile(tmp_path / "input-0.bin")
    ok = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    np.testing.assert_array_equal(
        np.fromfile(tmp_path / "output-0.bin", np.float32), TABLE[[1, 2, 3]].ravel()
    )
    np.array([1, -40, 3], np.int64).tofile(tmp_path / "input-0.bin")
    bad = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 8  # the program's exit code for a failed zg_run
    assert bad.stderr.strip() == f"zg_run: {MESSAGE.format(-40)}"


def _indexed(op: str, data_shape, idx_shape, out_shape, **attrs) -> onnx.ModelProto:
    inputs = [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
        helper.make_tensor_value_info("idx", TensorProto.INT64, idx_shape),
    ]
    ins = ["data", "idx"]
    if op.startswith("Scatter"):
        inputs.append(helper.make_tensor_value_info("upd", TensorProto.FLOAT, attrs.pop("upd")))
        ins.append("upd")
    graph = helper.make_graph(
        [helper.make_node(op, ins, ["y"], name="n", **attrs)],
        op.lower(),
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("model", "idx", "message"),
    [
        (
            _indexed("GatherElements", [3, 4], [3, 2], [3, 2], axis=1),
            [[0, 1], [2, 4], [3, -1]],
            "GatherElements node 'n': an index of 'idx' into axis 1 of 'data' is 4, outside [-4, 4)",
        ),
        (
            _indexed("GatherND", [3, 4], [2, 2], [2]),
            [[0, 1], [2, -5]],
            "GatherND node 'n': an index of 'idx' into 'data' (component 1) is -5, outside [-4, 4)",
        ),
        (
            _indexed("ScatterElements", [3, 4], [1, 2], [3, 4], axis=0, upd=[1, 2]),
            [[3, 0]],
            "ScatterElements node 'n': an index of 'idx' into axis 0 of 'data' is 3, outside "
            "[-3, 3)",
        ),
    ],
    ids=["GatherElements", "GatherND", "ScatterElements"],
)
def test_the_other_indexed_reads_and_writes(model, idx, message: str) -> None:
    compiled = compile_model(model)
    rng = np.random.default_rng(0)
    feeds = {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for i in model.graph.input
        if i.name != "idx"
    }
    ok = np.clip(np.array(idx), -2, 1)  # in range for every case
    ref = onnxruntime_run(model, {**feeds, "idx": ok})[0]
    np.testing.assert_allclose(compiled.run({**feeds, "idx": ok})["y"], ref, rtol=1e-6)
    with pytest.raises(InputError) as err:
        compiled.run({**feeds, "idx": np.array(idx, np.int64)})
    assert str(err.value) == message


@pytest.mark.skipif(opencl_available() is not None, reason=f"OpenCL: {opencl_available()}")
def test_on_opencl() -> None:
    model = compile_model(_embedding(), target="opencl")
    np.testing.assert_array_equal(model.run({"ids": np.array([1, 2, 31])})["y"], TABLE[[1, 2, 31]])
    with pytest.raises(InputError) as err:
        model.run({"ids": np.array([1, 40, 3])})
    assert str(err.value) == MESSAGE.format(40)
