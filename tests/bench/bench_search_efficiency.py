"""Not a unit test: how fast the XGBoost tuner finds good schedules, against random search.

Run: python tests/bench/bench_search_efficiency.py [--trials 256] [--seeds 0,1,2] [--workloads mm512,conv2,conv9]
     [--transfer-to conv6] [--plot curves.png] [--json]

For every workload and seed, both tuners run `--trials` measurements into fresh databases; the
figure of merit is how many trials the XGBoost tuner needs to reach the best GFLOP/s that random
search found in all its trials (AutoTVM's comparison), reported per run and as the median. The
default schedule is not given to either tuner as its first trial: this measures the search.

Transfer learning (`--transfer-to W`, "" to skip): for each seed, the xgb tuner tunes W from
scratch and again with a cost model pretrained on that seed's xgb records of the other workloads
(autotune/transfer.py). The figure is the number of trials each needs to reach 90% of the best
GFLOP/s either found; transfer should need at most half.
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

from bench_conv_tuned import WORKLOADS, conv_model  # noqa: E402
from bench_matmul_tuned import matmul_model  # noqa: E402

from autotune.database import Database  # noqa: E402
from autotune.task import anchor_info, extract_tasks  # noqa: E402
from autotune.tuner import tune_task  # noqa: E402


def workload(name: str):
    if name.startswith("mm"):
        return matmul_model(int(name[2:]))[0]
    return conv_model(*WORKLOADS[int(name[4:]) - 1])


def main_task(name: str):
    return max(extract_tasks(workload(name)), key=lambda t: t.flops)


def curve(
    name: str, tuner: str, seed: int, trials: int, db: Database | None = None, base_model=None
) -> list[float]:
    """Best-so-far GFLOP/s after each trial of one tuning run (into `db`, or a throwaway one)."""
    task = main_task(name)
    with tempfile.TemporaryDirectory() as tmp:
        db = db or Database(os.path.join(tmp, "db.jsonl"))
        return tune_task(
            task,
            anchor_info(task),
            db,
            trials,
            tuner=tuner,
            seed=seed,
            progress=None,
            base_model=base_model,
            start_with_default=False,
        ).curve


def trials_to_reach(c: list[float], target: float) -> int | None:
    return next((i + 1 for i, g in enumerate(c) if g >= target), None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workloads", default="mm512,conv2,conv9")
    ap.add_argument("--transfer-to", default="conv6")
    ap.add_argument("--plot")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    runs = []
    seeds = [int(s) for s in args.seeds.split(",")]
    tmp = tempfile.TemporaryDirectory()
    dbs = {seed: Database(os.path.join(tmp.name, f"xgb-{seed}.jsonl")) for seed in seeds}
    for name in args.workloads.split(","):
        for seed in seeds:
            xgb = curve(name, "xgb", seed, args.trials, db=dbs[seed])
            rnd = curve(name, "random", seed, args.trials)
            need = trials_to_reach(xgb, rnd[-1])
            runs.append(
                {
                    "workload": name,
                    "seed": seed,
                    "xgb": xgb,
                    "random": rnd,
                    "xgb_trials_to_random_best": need,
                }
            )
            if not args.json:
                print(f"{name:<8} seed {seed}: random best {rnd[-1]:6.1f} GFLOP/s, xgb best {xgb[-1]:6.1f}; "
                      f"xgb reaches random's best after {need} trials")  # fmt: skip
    needs = [r["xgb_trials_to_random_best"] or 10**9 for r in runs]
    median = statistics.median(needs)
    transfers = []
    if args.transfer_to:
        from autotune.transfer import transfer_model

        infos = {}
        for name in args.workloads.split(","):
            task = main_task(name)
            infos[task.workload_key] = anchor_info(task)
        for seed in seeds:
            base = transfer_model(dbs[seed], infos, seed=seed)
            scratch = curve(args.transfer_to, "xgb", seed, args.trials)
            seeded = curve(args.transfer_to, "xgb", seed, args.trials, base_model=base)
            target = 0.9 * max(scratch[-1], seeded[-1])
            t = {"seed": seed, "scratch": scratch, "transfer": seeded,
                 "scratch_trials_to_90": trials_to_reach(scratch, target),
                 "transfer_trials_to_90": trials_to_reach(seeded, target)}  # fmt: skip
            transfers.append(t)
            if not args.json:
                print(f"{args.transfer_to:<8} seed {seed}: 90% of best = {target:6.1f} GFLOP/s after "
                      f"{t['scratch_trials_to_90']} trials from scratch, {t['transfer_trials_to_90']} with transfer")  # fmt: skip
    summary = {
        "runs": runs,
        "median_trials": median,
        "transfer": transfers,
        "cpu": bench_env.cpu_description(),
    }
    if transfers:
        summary["median_scratch_trials_to_90"] = statistics.median(
            t["scratch_trials_to_90"] or 10**9 for t in transfers
        )
        summary["median_transfer_trials_to_90"] = statistics.median(
            t["transfer_trials_to_90"] or 10**9 for t in transfers
        )
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"cpu: {summary['cpu']}")
        print(f"median trials for xgb to reach random search's {args.trials}-trial best: {median}")
        if transfers:
            print(f"median trials to 90% of the best on {args.transfer_to}: "
                  f"{summary['median_scratch_trials_to_90']} from scratch, {summary['median_transfer_trials_to_90']} with transfer")  # fmt: skip
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = args.workloads.split(",")
        panels = len(names) + (1 if transfers else 0)
        fig, axes = plt.subplots(1, panels, figsize=(4.5 * panels, 4), squeeze=False)
        for ax, name in zip(axes[0], names):
            for r in (r for r in runs if r["workload"] == name):
                ax.plot(range(1, len(r["xgb"]) + 1), r["xgb"], color="C0", alpha=0.7)
                ax.plot(range(1, len(r["random"]) + 1), r["random"], color="C1", alpha=0.7)
            ax.plot([], color="C0", label="xgb")
            ax.plot([], color="C1", label="random")
            ax.set_title(name)
        if transfers:
            ax = axes[0][-1]
            for t in transfers:
                ax.plot(range(1, len(t["scratch"]) + 1), t["scratch"], color="C0", alpha=0.7)
                ax.plot(range(1, len(t["transfer"]) + 1), t["transfer"], color="C2", alpha=0.7)
            ax.plot([], color="C0", label="xgb from scratch")
            ax.plot([], color="C2", label="xgb + transfer")
            ax.set_title(f"{args.transfer_to}: transfer learning")
        for ax in axes[0]:
            ax.set_xlabel("trials")
            ax.set_ylabel("best GFLOP/s so far")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
