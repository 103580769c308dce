"""Not a unit test: the speed-up of 2 threads over 1 for ziggurat and for onnxruntime, ResNet-18.

Run: python tests/bench/bench_threads.py [--threads 2] [--db tune.jsonl] [--seconds 3] [--json]

Four engines timed in the same run, in alternating rounds: ziggurat compiled for 1 and for T
threads (parallel loops on ziggurat's pthread pool; `--db` applies tuned schedules, records
tuned for T threads first, else the one-thread records parallelized by the default heuristic),
and onnxruntime with intra_op_num_threads 1 and T. Every output is checked against onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import sys

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402

from autotune.apply_pass import tuned_schedules  # noqa: E402
from compiler import zoo  # noqa: E402
from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.model import compile_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--db", help="tuning database to apply")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    proto = zoo.resnet18(size=args.size)
    feeds = zoo.random_inputs(proto)
    engines, errors = {}, {}
    ref = None
    for t in (1, args.threads):
        sess = ort_session(proto.SerializeToString(), t)
        out = sess.run(None, feeds)
        ref = ref if ref is not None else out
        engines[f"onnxruntime x{t}"] = lambda sess=sess: sess.run(None, feeds)
    for t in (1, args.threads):
        compiled = compile_model(proto, schedules=tuned_schedules(args.db, t), threads=t)
        got = compiled.run(feeds)
        errors[t] = max(float(np.max(np.abs(g - r))) for g, r in zip(got.values(), ref))
        engines[f"ziggurat x{t}"] = compiled.runner(feeds)
    best = time_interleaved(engines, args.seconds)
    t = args.threads
    result = {
        "threads": t,
        "db": args.db,
        "ms": {k: round(v * 1e3, 3) for k, v in best.items()},
        "ziggurat_speedup": round(best["ziggurat x1"] / best[f"ziggurat x{t}"], 3),
        "onnxruntime_speedup": round(best["onnxruntime x1"] / best[f"onnxruntime x{t}"], 3),
        "ratio_1_thread": round(best["ziggurat x1"] / best["onnxruntime x1"], 3),
        f"ratio_{t}_threads": round(best[f"ziggurat x{t}"] / best[f"onnxruntime x{t}"], 3),
        "max_abs_err": max(errors.values()),
        "cpu": bench_env.cpu_description(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"cpu: {result['cpu']}")
        for name, ms in result["ms"].items():
            print(f"{name:<18}{ms:9.2f} ms")
        print(f"speed-up of {t} threads over 1: ziggurat {result['ziggurat_speedup']:.2f}x, "
              f"onnxruntime {result['onnxruntime_speedup']:.2f}x")  # fmt: skip
        print(f"ziggurat / onnxruntime latency: {result['ratio_1_thread']:.2f}x on 1 thread, "
              f"{result[f'ratio_{t}_threads']:.2f}x on {t}; max |err| {result['max_abs_err']:.1e}")  # fmt: skip
    return 0 if result["max_abs_err"] <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
