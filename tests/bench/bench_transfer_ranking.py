"""Not a unit test: how well a cost model trained on the other tasks' records ranks a task's configs.

Run: python tests/bench/bench_transfer_ranking.py MODEL.onnx|zoo:NAME --db tune.jsonl [--threads 1]

For every task of the model with records in the database, a model is pretrained on the records of
all other tasks (autotune/transfer.py, as `ziggurat tune --transfer` does) and scores this task's
measured configs; the Spearman rank correlation with the measured GFLOP/s and how good the
top-scored config is (share of the best measured) say what transfer learning brings before the
first measurement. No measurement is made.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from autotune.database import Database
from autotune.task import anchor_info, extract_tasks
from autotune.transfer import task_training_rows, transfer_model
from compiler.zoo import model_from_arg


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--db", required=True)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    db = Database(args.db)
    tasks = extract_tasks(model_from_arg(args.model))
    infos = {t.workload_key: anchor_info(t) for t in tasks}
    cors, tops = [], []
    for t in tasks:
        X, y = task_training_rows(db, t.workload_key, infos[t.workload_key], args.threads)
        if len(y) < 5 or not np.any(y > 0):
            continue
        model = transfer_model(db, infos, exclude=t.workload_key, threads=args.threads)
        if model is None:
            continue
        p = model.predict(X)
        cors.append(spearman(p, y))
        tops.append(y[int(np.argmax(p))] / y.max())
        print(
            f"{t.name[:40]:<42} {len(y):>4} records  spearman {cors[-1]:+.2f}  top-scored {tops[-1]:.0%} of best"
        )
    if not cors:
        print("no task with records", file=sys.stderr)
        return 1
    print(
        f"median over {len(cors)} tasks: spearman {np.median(cors):+.2f}, top-scored config {np.median(tops):.0%} of the best"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
