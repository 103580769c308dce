"""compiler/model.py: the model API.

Threads: whole models compiled for several threads give the same results as one thread and as
onnxruntime, their kernels really call the thread pool, and bad thread counts are refused.

compile_report, as `ziggurat compile MODEL --report json` prints it (the CLI runs as a
subprocess, as a user runs it: one JSON object on stdout): the acceptance figures of the
graph-level passes. On the zoo ResNet-18 the passes must fold every batch norm, fuse the model
into few kernels and let the memory plan reuse most intermediate bytes; on the small CNN,
`--no-graph-opt` keeps the batch norms and leaves one kernel per operator, so the figures show
that the passes (not the model) do the work.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from compiler import zoo
from compiler.errors import CompileError
from compiler.model import compile_model
from compiler.pipelines import LEVELS

REPO = Path(__file__).resolve().parents[2]
REPORT_KEYS = {
    "kernels",
    "unique_kernels",
    "fused_groups",
    "batch_norms_left",
    "intermediate_bytes_total",
    "intermediate_bytes_peak_planned",
    "peak_over_total",
    "compile_seconds",
}


def ziggurat(*args: str) -> str:
    script = Path(sys.executable).parent / "ziggurat"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "compiler.cli"]
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def report(model: str, *flags: str) -> dict[str, Any]:
    data = json.loads(ziggurat("compile", model, "--report", "json", *flags))
    assert isinstance(data, dict)
    assert REPORT_KEYS <= data.keys(), data
    return data


@pytest.fixture(scope="module")
def resnet18() -> dict[str, Any]:
    return report("zoo:resnet18")


@pytest.fixture(scope="module")
def small_cnn() -> tuple[dict[str, Any], dict[str, Any]]:
    return report("zoo:small-cnn"), report("zoo:small-cnn", "--no-graph-opt")


def test_resnet18_acceptance_figures(resnet18: dict[str, Any]) -> None:
    r = resnet18
    # one per conv group, pool, head; plus the input's move to the blocked layout and the
    # zeroing of its padded border; the 13 stride-1 3x3 convs are Winograd convs, each two
    # more kernels (its input and output transforms beside the product)
    assert r["kernels"] <= 27 + 2 * 13, r
    assert 1 <= r["unique_kernels"] <= r["kernels"], r
    assert r["batch_norms_left"] == 0, r
    assert r["fused_groups"] >= 20, r
    assert 0 < r["intermediate_bytes_peak_planned"] <= r["intermediate_bytes_total"], r
    assert r["peak_over_total"] <= 0.40, r
    assert r["peak_over_total"] == pytest.approx(
        r["intermediate_bytes_peak_planned"] / r["intermediate_bytes_total"], abs=1e-4
    )


def test_resnet18_compile_seconds_per_level(resnet18: dict[str, Any]) -> None:
    seconds = resnet18["compile_seconds"]
    for level in ("import", *LEVELS, "machine-code"):
        assert level in seconds, seconds
        assert isinstance(seconds[level], float | int) and seconds[level] >= 0, seconds


def test_graph_passes_matter_on_small_cnn(
    small_cnn: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    opt, raw = small_cnn
    assert opt["batch_norms_left"] == 0 and opt["fused_groups"] > 0, opt
    assert raw["batch_norms_left"] > 0, raw
    assert raw["fused_groups"] == 0, raw
    assert raw["kernels"] > opt["kernels"], (raw, opt)
    assert "graph" not in raw["compile_seconds"]  # the graph-level passes did not run
    assert "graph" in opt["compile_seconds"]


def test_emit_graph_shows_fused_groups() -> None:
    text = ziggurat("compile", "zoo:small-cnn", "--emit", "graph")
    # One readable line per group: `%r = graph.fused "conv+add+relu" out_fusable (%a, %b) : ...`,
    # named after its ops, anchor first.
    line = re.compile(
        r'^\s*%[\w.]+ = graph\.fused "([a-z0-9_]+(?:\+[a-z0-9_]+)*)" [a-z_]+ \(', re.M
    )
    groups = line.findall(text)
    assert len(groups) == text.count("graph.fused"), text
    assert "conv_nchwc+relu" in groups and "conv_nchwc+add+relu" in groups, groups
    assert "graph.batch_norm" not in text


@pytest.mark.parametrize("name", ["small_cnn", "transformer_block", "mlp"])
def test_two_threads_match_one_and_onnxruntime(name: str) -> None:
    proto = getattr(zoo, name)()
    feeds = zoo.random_inputs(proto)
    one = compile_model(proto, threads=1)
    two = compile_model(proto, threads=2)
    assert not one.program.parallel
    if name != "mlp":  # the mlp's kernels are below the parallel threshold
        assert two.program.parallel
    a, b = one.run(feeds), two.run(feeds)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    for k in ref:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b[k], ref[k], rtol=1e-3, atol=1e-4)


def test_runner_uses_the_requested_thread_count() -> None:
    from compiler import parallel_runtime

    proto = zoo.small_cnn()
    model = compile_model(proto, threads=3)
    parallel_runtime.set_num_threads(1)
    model.runner(zoo.random_inputs(proto))
    assert parallel_runtime.get_num_threads() == 3
    parallel_runtime.set_num_threads(1)


def test_bad_thread_count() -> None:
    with pytest.raises(CompileError, match="threads must be at least 1"):
        compile_model(zoo.mlp(), threads=0)
