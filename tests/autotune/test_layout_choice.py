"""autotune/layout_choice.py: the layout is timed on the whole model, recorded in the tuning
database as records it validates, and read back for this CPU and thread count only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autotune.database import Database, validate_record
from autotune.layout_choice import (
    LAYOUT_SPACE,
    candidate_layouts,
    choose_layout,
    has_blocked_convs,
    model_key,
    tuned_layout,
)
from autotune.record import TuningRecord
from compiler import zoo
from compiler.model import compile_model
from tests.support.references import onnxruntime_run


@pytest.fixture(scope="module")
def chosen(tmp_path_factory: pytest.TempPathFactory) -> dict:
    db = tmp_path_factory.mktemp("layout") / "db.jsonl"
    model = zoo.small_cnn()
    layout, timings = choose_layout(model, str(db), candidates=["NCHW", "NCHW8c"], seconds=0.05)
    return {"db": db, "model": model, "layout": layout, "timings": timings}


def test_candidates_are_nchw_and_blocks_of_a_full_and_half_vector() -> None:
    assert candidate_layouts(16) == ["NCHW", "NCHW16c", "NCHW8c"]
    assert candidate_layouts(8) == ["NCHW", "NCHW8c", "NCHW4c"]


def test_choose_layout_times_every_candidate_and_records_them(chosen: dict) -> None:
    timings = chosen["timings"]
    assert sorted(t.layout for t in timings) == ["NCHW", "NCHW8c"]
    assert chosen["layout"] == timings[0].layout
    assert timings[0].seconds <= timings[1].seconds and timings[0].seconds > 0
    records = [json.loads(line) for line in chosen["db"].read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert validate_record(r) is None
        assert r["workload_key"] == model_key(chosen["model"])
        assert r["space_hash"] == LAYOUT_SPACE and r["threads"] == 1
    by_block = {r["config"]["block"]: r for r in records}
    assert set(by_block) == {0, 8}
    assert by_block[0]["passes"] == [] and by_block[8]["passes"] == ["blocked-layout{block=8}"]


def test_tuned_layout_reads_back_the_fastest(chosen: dict) -> None:
    assert tuned_layout(str(chosen["db"]), chosen["model"]) == chosen["layout"]
    assert tuned_layout(str(chosen["db"]), chosen["model"], threads=2) is None
    assert tuned_layout(str(chosen["db"]), zoo.resnet18(size=32, classes=10)) is None
    assert tuned_layout(None, chosen["model"]) is None


def test_a_record_from_another_cpu_is_not_applied(chosen: dict, tmp_path: Path) -> None:
    db = tmp_path / "other.jsonl"
    records = [json.loads(line) for line in chosen["db"].read_text().splitlines()]
    for r in records:
        r["target"] = {**r["target"], "cpu": "someothercpu"}
    db.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert tuned_layout(str(db), chosen["model"]) is None


def test_the_fastest_record_wins_whatever_the_order(chosen: dict, tmp_path: Path) -> None:
    db = tmp_path / "rigged.jsonl"
    records = [json.loads(line) for line in chosen["db"].read_text().splitlines()]
    for r in records:  # NCHW made the slowest, then the fastest
        r["costs"] = [1.0 if r["config"]["block"] == 0 else 0.5]
    db.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert tuned_layout(str(db), chosen["model"]) == "NCHW8c"
    Database(db).append(TuningRecord.from_json({**records[0], "costs": [0.1]}))
    assert tuned_layout(str(db), chosen["model"]) == "NCHW"


def test_each_layout_computes_what_onnxruntime_does(chosen: dict) -> None:
    model = chosen["model"]
    feeds = zoo.random_inputs(model)
    (ref,) = onnxruntime_run(model, feeds)
    for layout in ("NCHW", "NCHW4c", "NCHW8c", "NCHW16c", "auto"):
        (out,) = compile_model(model, layout=layout).run(feeds).values()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5, err_msg=layout)


def test_has_blocked_convs() -> None:
    assert has_blocked_convs(zoo.small_cnn())
    assert not has_blocked_convs(zoo.matmul(16))


def test_unknown_layout_is_refused_before_compiling(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown layout 'NHWC'"):
        choose_layout(zoo.small_cnn(), str(tmp_path / "db.jsonl"), candidates=["NHWC"])
    assert not (tmp_path / "db.jsonl").exists()
