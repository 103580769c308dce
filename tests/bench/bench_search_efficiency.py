"""Not a unit test: how fast the XGBoost tuner finds good schedules, against random search.

Run: python tests/bench/bench_search_efficiency.py [--trials 256] [--seeds 0,1,2] [--workloads mm512,conv2,conv9]
     [--plot curves.png] [--json]

For every workload and seed, both tuners run `--trials` measurements into fresh databases; the
figure of merit is how many trials the XGBoost tuner needs to reach the best GFLOP/s that random
search found in all its trials (AutoTVM's comparison), reported per run and as the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

sys.path.insert(0, os.path.dirname(__file__))

from bench_conv_tuned import WORKLOADS, conv_model  # noqa: E402
from bench_matmul_tuned import matmul_model  # noqa: E402

from autotune.database import Database  # noqa: E402
from autotune.task import anchor_info, extract_tasks  # noqa: E402
from autotune.tuner import tune_task  # noqa: E402


def workload(name: str):
    if name.startswith("mm"):
        return matmul_model(int(name[2:]))[0]
    return conv_model(*WORKLOADS[int(name[4:]) - 1])


def curve(name: str, tuner: str, seed: int, trials: int) -> list[float]:
    task = max(extract_tasks(workload(name)), key=lambda t: t.flops)
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(os.path.join(tmp, "db.jsonl"))
        return tune_task(task, anchor_info(task), db, trials, tuner=tuner, seed=seed, progress=None).curve


def trials_to_reach(c: list[float], target: float) -> int | None:
    return next((i + 1 for i, g in enumerate(c) if g >= target), None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workloads", default="mm512,conv2,conv9")
    ap.add_argument("--plot")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    runs = []
    for name in args.workloads.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            xgb = curve(name, "xgb", seed, args.trials)
            rnd = curve(name, "random", seed, args.trials)
            need = trials_to_reach(xgb, rnd[-1])
            runs.append({"workload": name, "seed": seed, "xgb": xgb, "random": rnd, "xgb_trials_to_random_best": need})
            if not args.json:
                print(f"{name:<8} seed {seed}: random best {rnd[-1]:6.1f} GFLOP/s, xgb best {xgb[-1]:6.1f}; "
                      f"xgb reaches random's best after {need} trials")  # fmt: skip
    needs = [r["xgb_trials_to_random_best"] or 10**9 for r in runs]
    median = statistics.median(needs)
    if args.json:
        print(json.dumps({"runs": runs, "median_trials": median}))
    else:
        print(f"median trials for xgb to reach random search's {args.trials}-trial best: {median}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        for r in runs:
            ax.plot(r["xgb"], color="C0", alpha=0.6)
            ax.plot(r["random"], color="C1", alpha=0.6)
        ax.plot([], color="C0", label="xgb")
        ax.plot([], color="C1", label="random")
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOP/s so far")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
