"""Not a unit test: the ResNet-18 conv2d workloads of the AutoTVM paper (Table 1), tuned, vs onnxruntime.

Run: python tests/bench/bench_conv_tuned.py [--trials 256] [--db conv.jsonl] [--only 1,2] [--json]

Each workload is an ONNX Conv (batch 1, padding K//2, random weights); ziggurat tunes its kernel
for `--trials` measurements (resuming from `--db`), compiles it with the best record and is timed
against onnxruntime (one thread) in the same run, in alternating rounds. Prints each ratio
(onnxruntime time / ziggurat time: > 1 means ziggurat is faster), the geometric mean, and the
tuning throughput.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from autotune.apply_pass import tuned_schedules  # noqa: E402
from autotune.task import extract_tasks  # noqa: E402
from autotune.tune_model import tune_tasks  # noqa: E402
from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.model import compile_model  # noqa: E402

# H, W, IC, OC, K, S (AutoTVM, NeurIPS 2018, Table 1)
WORKLOADS = [
    (224, 224, 3, 64, 7, 2), (56, 56, 64, 64, 3, 1), (56, 56, 64, 64, 1, 1), (56, 56, 64, 128, 3, 2),
    (56, 56, 64, 128, 1, 2), (28, 28, 128, 128, 3, 1), (28, 28, 128, 256, 3, 2), (28, 28, 128, 256, 1, 2),
    (14, 14, 256, 256, 3, 1), (14, 14, 256, 512, 3, 2), (14, 14, 256, 512, 1, 2), (7, 7, 512, 512, 3, 1),
]  # fmt: skip


def conv_model(h: int, w: int, ic: int, oc: int, k: int, s: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(
        (rng.standard_normal((oc, ic, k, k)) * 0.05).astype(np.float32), "w"
    )
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], name="conv", strides=[s, s], pads=[k // 2] * 4
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ic, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument(
        "--db", help="tuning database to resume from and keep (default: a temporary one)"
    )
    ap.add_argument("--only", default="", help="comma-separated workload numbers (1-12)")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    chosen = (
        [int(i) for i in args.only.split(",")] if args.only else list(range(1, len(WORKLOADS) + 1))
    )
    rows = []
    db, _tmp = bench_env.scratch_db(args.db)
    use_db = db if args.trials > 0 or args.db else None  # --trials 0 alone: default schedules
    for i in chosen:
        h, w, ic, oc, k, s = WORKLOADS[i - 1]
        model = conv_model(h, w, ic, oc, k, s)
        t0 = time.perf_counter()
        if args.trials > 0:
            tune_tasks(extract_tasks(model), db, args.trials, progress=not args.json)
        tune_s = time.perf_counter() - t0
        compiled = compile_model(model, schedules=tuned_schedules(use_db))
        x = np.random.default_rng(1).standard_normal((1, ic, h, w)).astype(np.float32)
        sess = ort_session(model.SerializeToString(), 1)
        ref = sess.run(None, {"x": x})[0]
        err = float(np.max(np.abs(compiled.run({"x": x})["y"] - ref)))
        t = time_interleaved(
            {
                "ziggurat": compiled.runner({"x": x}),
                "onnxruntime": lambda sess=sess, x=x: sess.run(None, {"x": x}),
            },
            args.seconds,
        )
        rows.append({
            "workload": i, "shape": f"{h}x{w} {ic}->{oc} k{k} s{s}",
            "ziggurat_ms": round(t["ziggurat"] * 1e3, 3), "onnxruntime_ms": round(t["onnxruntime"] * 1e3, 3),
            "speedup_vs_ort": round(t["onnxruntime"] / t["ziggurat"], 3), "max_abs_err": err,
            "tune_s": round(tune_s, 1), "trials_per_min": round(args.trials / tune_s * 60, 1) if args.trials else None,
        })  # fmt: skip
        if not args.json:
            r = rows[-1]
            print(f"\n#{i:<3}{r['shape']:<26} ziggurat {r['ziggurat_ms']:8.3f} ms  ort {r['onnxruntime_ms']:8.3f} ms  "
                  f"x{r['speedup_vs_ort']:.2f}  ({r['trials_per_min']} trials/min)")  # fmt: skip
    geo = math.exp(sum(math.log(r["speedup_vs_ort"]) for r in rows) / len(rows))
    if args.json:
        print(
            json.dumps(
                {
                    "workloads": rows,
                    "geomean_speedup_vs_ort": round(geo, 3),
                    "cpu": bench_env.cpu_description(),
                }
            )
        )
    else:
        print(f"cpu: {bench_env.cpu_description()}")
        print(
            f"geometric mean vs onnxruntime: {geo:.2f}x  (min {min(r['speedup_vs_ort'] for r in rows):.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
