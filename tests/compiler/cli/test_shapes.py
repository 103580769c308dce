"""`ziggurat shapes`: a model's symbols with their bounds (the model's own with its reason) and
its inputs' and outputs' shapes over them, printed without a compile; a --dim beyond the
model's bound is one error line."""

from __future__ import annotations

from dataclasses import replace

import onnx

from compiler import zoo
from tests.compiler.test_run_time_dims import cumulative
from tests.support import transformer_models as tm
from tests.support.cli import run_ziggurat


def test_a_kv_cache_decoder(tmp_path) -> None:
    path = tmp_path / "llama.onnx"
    onnx.save(tm.build(tm.with_cache(tm.SMALL["llama"])), path)
    r = run_ziggurat("shapes", path, "--dim", "batch=1..4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["symbols:", "  batch in 1..4", "  seq in 0..", "  past in 0.."]
    assert "  attention_mask [batch, past + seq]" in lines
    values = lines.index("input values:")
    assert lines[values + 1].startswith("  input_ids in [-1000, 1000)  (Gather node '#12' reads ")
    assert lines[lines.index("outputs:") + 1 :][:2] == [
        "  logits [batch, seq, 1000]",
        "  present.0.key [batch, 2, past + seq, 16]",
    ]


def test_the_models_own_bound_and_a_dim_beyond_it(tmp_path) -> None:
    path = tmp_path / "gpt2.onnx"
    onnx.save(tm.build(replace(tm.SMALL["gpt2"], positions=32)), path)
    r = run_ziggurat("shapes", path)
    assert r.returncode == 0, r.stderr
    bound = [line for line in r.stdout.splitlines() if line.startswith("  seq in")]
    assert bound[0].startswith("  seq in 0..32  (the model's bound: Gather node '#11' reads index ")
    r = run_ziggurat("shapes", path, "--dim", "seq=1..64")
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "ziggurat: error: dims['seq'] = (1, 64) is beyond what the model allows, 'seq' <= 32: "
        f"{bound[0].split('bound: ')[1][:-1]}"
    ]


def test_a_static_model() -> None:
    r = run_ziggurat("shapes", "zoo:mlp")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "symbols: none (every shape is static)",
        "inputs:",
        "  input [4, 64]",
        "outputs:",
        "  output [4, 10]",
    ]


def test_whether_it_compiles_once_for_every_size(tmp_path) -> None:
    decoder = tmp_path / "llama.onnx"
    onnx.save(tm.build(tm.with_cache(tm.SMALL["llama"])), decoder)
    r = run_ziggurat("shapes", decoder)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "compiled: once for every size"
    onnx.save(cumulative(), tmp_path / "cumsum.onnx")
    r = run_ziggurat("shapes", tmp_path / "cumsum.onnx")
    assert r.returncode == 0, r.stderr
    last = r.stdout.splitlines()[-1]
    assert last == (
        "compiled: once per size (CumSum node '#0' reads 'x', whose shape depends on the "
        "symbols; CumSum is not compiled for run-time sizes yet)"
    )
    mlp = zoo.builtin("mlp")
    for value in (mlp.graph.input[0], mlp.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(mlp, tmp_path / "mlp.onnx")
    r = run_ziggurat("shapes", tmp_path / "mlp.onnx")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "compiled: once for every size"
