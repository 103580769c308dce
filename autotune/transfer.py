"""Transfer learning: seed a new task's cost model with what other tasks' records taught.

AutoTVM's observation: the analytic loop features mean the same thing on every kernel (trip
counts, bytes per level, vector width, working set against the caches), so a ranking model trained
on the measured records of other kernels already orders a new kernel's candidates far better than
chance. `transfer_model` featurizes the database's records of the given other tasks (one ranking
group per task: throughputs of different kernels are not comparable) and returns a model that the
new task's fits continue boosting from (`XGBCostModel.pretrained`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from autotune.cost_model import XGBCostModel
from autotune.database import Database
from autotune.tuning_target import CpuTuningTarget, TuningTarget


def task_training_rows(
    db: Database, workload_key: str, info, threads: int = 1, target: TuningTarget | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and GFLOP/s labels (0 for failures) of one task's records in `db` (on
    `target`: its space and features; the CPU with `threads` by default)."""
    target = target or CpuTuningTarget(threads)
    threads = target.threads
    space = target.space(info)
    records = [
        r
        for r in db.records(workload_key, space.space_hash(), threads, target.record_preset)
        if target.accepts(r)
    ]
    if not records:
        return np.zeros((0, 0), np.float32), np.zeros(0)
    X = target.features(info, [space.to_schedule(r.config) for r in records])
    y = np.array(
        [
            0.0 if r.error_kind or not r.costs else r.workload.flops / min(r.costs) / 1e9
            for r in records
        ]
    )
    return X, y


def transfer_model(
    db: Database,
    infos: Mapping[str, object],
    exclude: str | None = None,
    seed: int = 0,
    threads: int = 1,
    target: TuningTarget | None = None,
) -> XGBCostModel | None:
    """A model pretrained on the records of every task in `infos` except `exclude` (None if none)."""
    xs, ys = [], []
    for key, info in infos.items():
        if key == exclude:
            continue
        X, y = task_training_rows(db, key, info, threads, target)
        if len(y) and np.any(y > 0):
            xs.append(X)
            ys.append(y)
    if not xs:
        return None
    return XGBCostModel.pretrained(xs, ys, seed=seed)
