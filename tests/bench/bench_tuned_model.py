"""Not a unit test: what a whole-model tune buys, default vs tuned schedules vs onnxruntime.

Run: python tests/bench/bench_tuned_model.py MODEL --db tune.jsonl [--threads 1] [--seconds 3]
     [--json]

Three engines timed in the same run, in alternating rounds: ziggurat with the default schedules,
ziggurat with the best records of `--db` (from `ziggurat tune MODEL --db ...`: the layout it
chose and the kernels' schedules; kernels without a record keep their default), and onnxruntime, all on `--threads` threads. Outputs are checked
against onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import sys

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402

from autotune.apply_pass import tuned_schedules  # noqa: E402
from autotune.layout_choice import tuned_layout  # noqa: E402
from compiler import zoo  # noqa: E402
from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.frontend.onnx import load_model  # noqa: E402
from compiler.model import compile_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="an .onnx file or zoo:NAME")
    ap.add_argument("--db", required=True, help="tuning database to apply")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    proto = load_model(zoo.model_from_arg(args.model))
    feeds = zoo.random_inputs(proto)
    sess = ort_session(proto.SerializeToString(), args.threads)
    ref = sess.run(None, feeds)
    engines = {"onnxruntime": lambda: sess.run(None, feeds)}
    errors = []
    layout = tuned_layout(args.db, proto, args.threads) or "auto"
    tuned = tuned_schedules(args.db, args.threads)
    for name, schedules, lay in (("default", [], "auto"), ("tuned", tuned, layout)):
        compiled = compile_model(proto, schedules=schedules, threads=args.threads, layout=lay)
        got = compiled.run(feeds)
        errors += [float(np.max(np.abs(g - r))) for g, r in zip(got.values(), ref, strict=True)]
        engines[name] = compiled.runner(feeds)
    best = time_interleaved(engines, args.seconds)
    result = {
        "model": proto.graph.name or args.model,
        "threads": args.threads,
        "db": args.db,
        "layout": {"default": "auto", "tuned": layout},
        "ms": {k: round(v * 1e3, 3) for k, v in best.items()},
        "tuned_speedup": round(best["default"] / best["tuned"], 3),
        "default_ratio": round(best["default"] / best["onnxruntime"], 3),
        "tuned_ratio": round(best["tuned"] / best["onnxruntime"], 3),
        "max_abs_err": max(errors),
        "cpu": bench_env.cpu_description(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"cpu: {result['cpu']}; tuned layout: {layout}")
        for name, ms in result["ms"].items():
            print(f"{name:<12}{ms:9.3f} ms")
        print(f"tuned / default: {result['tuned_speedup']:.3f}x faster; vs onnxruntime: default "
              f"{result['default_ratio']:.2f}x, tuned {result['tuned_ratio']:.2f}x; "
              f"max |err| {result['max_abs_err']:.1e}")  # fmt: skip
    return 0 if result["max_abs_err"] <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
