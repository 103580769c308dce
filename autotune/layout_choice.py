"""The convolutions' data layout as a tuning decision: measured on the whole model, recorded.

A layout changes which kernels a model has, so it is chosen at the graph level before the
kernels are tuned (AutoTVM's x86 flow picks NCHW[x]c blocks per conv, then its graph tuner
picks a consistent assignment; here one block rule holds for the whole model and the candidates
are the layouts, compiler/pipelines.py LAYOUTS). `choose_layout` compiles the model in each
candidate layout with the schedules known so far (the database's, else the defaults), times
them interleaved, and appends one record per candidate to the tuning database:

    workload_key "layout:<sha256 of the model>", space_hash LAYOUT_SPACE,
    config {"block": b} (0: NCHW), passes the graph-level layout pass, costs the model's runs.

`tuned_layout` reads the fastest of them back for this CPU and thread count, so that a model
compiled with the database (`ziggurat compile/run/bench --db`) gets the layout its kernels were
tuned in. Records measured on another CPU are not applied: the choice depends on the machine.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from autotune.apply_pass import tuned_schedules
from autotune.database import Database, compiler_version, host_target
from autotune.record import TuningRecord, Workload
from compiler import zoo
from compiler.benchmark import time_interleaved
from compiler.frontend.onnx import load_model
from compiler.model import compile_model, import_model, lower
from compiler.pipelines import layout_passes
from dialects.graph_shapes import layout_block, layout_name
from passes.schedule.cpu_target import cpu_target
from passes.transforms.blocked_layout import MIN_BLOCK

LAYOUT_SPACE = "layout-v1"
"""The space hash of layout records (bumped when the block rule changes)."""


def model_key(model: onnx.ModelProto) -> str:
    """The layout records' workload key of a model: its serialized form, hashed."""
    return "layout:" + hashlib.sha256(model.SerializeToString()).hexdigest()


def candidate_layouts(width: int | None = None) -> list[str]:
    """The layouts worth measuring on this CPU: NCHW, blocks of a full vector and of half one."""
    width = width or cpu_target().width
    blocks = [b for b in (width, width // 2) if b >= MIN_BLOCK]
    return ["NCHW", *(f"NCHW{b}c" for b in blocks)]


def has_blocked_convs(model: onnx.ModelProto) -> bool:
    """Whether the default layout blocks any of the model's convolutions (without one, every
    candidate compiles to the same program and there is nothing to choose)."""
    module = lower(import_model(model), "graph", layout="auto")
    return any(op.name == "graph.conv_nchwc" for op in module.walk())


@dataclass(frozen=True)
class LayoutTiming:
    layout: str
    seconds: float


def choose_layout(
    model: str | Path | onnx.ModelProto,
    db_path: str,
    threads: int = 1,
    candidates: list[str] | None = None,
    seconds: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> tuple[str, list[LayoutTiming]]:
    """The fastest layout of `model` among `candidates` (default: candidate_layouts()), with the
    database's schedules, each timing appended to the database as a layout record."""
    proto = load_model(model)
    candidates = candidates or candidate_layouts()
    for c in candidates:
        layout_passes(c)  # an unknown name fails before any compilation
    feeds = zoo.random_inputs(proto)
    schedules = tuned_schedules(db_path, threads) if Path(db_path).exists() else []
    runners: dict[str, Callable[[], object]] = {}
    for c in candidates:
        if progress is not None:
            progress(f"compiling in layout {c}")
        compiled = compile_model(proto, threads=threads, schedules=schedules, layout=c)
        runners[c] = compiled.runner(feeds)
    if progress is not None:
        progress(f"timing {len(runners)} layouts")
    best = time_interleaved(runners, seconds)
    width = cpu_target().width
    key = model_key(proto)
    db = Database(db_path)
    for c, t in best.items():
        record = TuningRecord.new(
            Workload(key, f"layout of {proto.graph.name or 'model'}"),
            LAYOUT_SPACE,
            {"block": width if c == "auto" else layout_block(c)},
            layout_passes(c),
            [float(t)],
            threads=threads,
            target=host_target(),
            compiler_version=compiler_version(),
        )
        db.append(record)
    timings = sorted((LayoutTiming(c, t) for c, t in best.items()), key=lambda x: x.seconds)
    return timings[0].layout, timings


def tuned_layout(db_path: str | None, model: Any, threads: int = 1) -> str | None:
    """The layout `choose_layout` found fastest for `model` on this CPU at `threads` threads, or
    None when the database has no such record."""
    if not db_path or not Path(db_path).exists():
        return None
    proto = load_model(model)
    cpu = host_target().get("cpu")
    with warnings.catch_warnings():  # the schedules' pass reads this database too and warns
        warnings.simplefilter("ignore")  # about its bad records once
        found = Database(db_path).records(model_key(proto), LAYOUT_SPACE, threads)
    records = [r for r in found if (r.target or {}).get("cpu") == cpu and r.ok]
    if not records:
        return None
    block = min(records, key=lambda r: r.cost).config.get("block")
    return layout_name(block) if isinstance(block, int) else None


def timing_table(timings: list[LayoutTiming]) -> str:
    """The candidates, fastest first, with their time relative to the fastest."""
    best = timings[0].seconds
    return "\n".join(
        f"  {t.layout:<9} {t.seconds * 1e3:9.3f} ms  {t.seconds / best:5.2f}x" for t in timings
    )
