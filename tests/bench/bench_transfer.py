"""Not a unit test: transfer learning from a tuned model's records to a new workload.

Run: python tests/bench/bench_transfer.py --source-db r18.jsonl [--source-model zoo:resnet18]
     [--target conv6] [--trials 96] [--seeds 0,1,2] [--json]

The source is a database of another model's tuning run (e.g. `ziggurat tune zoo:resnet18 --trials
256 --db r18.jsonl`). Source tasks whose anchor has the target's loop extents are left out, so
nothing of the target's own shape is known. For each seed the xgb tuner tunes the target from
scratch and with a model pretrained on the source records (autotune/transfer.py), each into a fresh
database, without the default schedule as first trial (this measures the search). The figure: the
trials each needs to reach 90% of the best GFLOP/s either run found.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

sys.path.insert(0, os.path.dirname(__file__))

from bench_search_efficiency import main_task, trials_to_reach  # noqa: E402

from autotune.database import Database  # noqa: E402
from autotune.task import anchor_info, extract_tasks  # noqa: E402
from autotune.transfer import transfer_model  # noqa: E402
from autotune.tuner import tune_task  # noqa: E402
from compiler.zoo import model_from_arg  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-db", required=True)
    ap.add_argument("--source-model", default="zoo:resnet18")
    ap.add_argument("--target", default="conv6")
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    target = main_task(args.target)
    info = anchor_info(target)
    source = Database(args.source_db)
    infos = {}
    for t in extract_tasks(model_from_arg(args.source_model)):
        a = anchor_info(t)
        if list(a.extents) != list(info.extents):
            infos[t.workload_key] = a
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        base = transfer_model(source, infos, seed=seed)
        curves = {}
        for name, model in (("scratch", None), ("transfer", base)):
            with tempfile.TemporaryDirectory() as tmp:
                db = Database(os.path.join(tmp, "db.jsonl"))
                curves[name] = tune_task(
                    target,
                    info,
                    db,
                    args.trials,
                    seed=seed,
                    progress=None,
                    base_model=model,
                    start_with_default=False,
                ).curve
        goal = 0.9 * max(curves["scratch"][-1], curves["transfer"][-1])
        run = {
            "seed": seed,
            **curves,
            **{f"{k}_trials_to_90": trials_to_reach(c, goal) for k, c in curves.items()},
        }
        runs.append(run)
        if not args.json:
            print(f"{args.target} seed {seed}: 90% of best = {goal:.1f} GFLOP/s after {run['scratch_trials_to_90']} trials "
                  f"from scratch, {run['transfer_trials_to_90']} with transfer ({len(infos)} source tasks)")  # fmt: skip
    med = {
        k: statistics.median(r[f"{k}_trials_to_90"] or 10**9 for r in runs)
        for k in ("scratch", "transfer")
    }
    if args.json:
        print(
            json.dumps(
                {"runs": runs, "median_trials_to_90": med, "cpu": bench_env.cpu_description()}
            )
        )
    else:
        print(f"cpu: {bench_env.cpu_description()}")
        print(
            f"median trials to 90% of the best: {med['scratch']} from scratch, {med['transfer']} with transfer"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
