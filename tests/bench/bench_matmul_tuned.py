"""Not a unit test: an fp32 matmul (an ONNX MatMul model) tuned by ziggurat, against numpy/OpenBLAS.

Run: python tests/bench/bench_matmul_tuned.py [--size 1024] [--trials 256] [--db mm.jsonl]  (no --db: a temporary database) [--seconds 2]

Tunes the model's kernel for `--trials` measurements (resuming from `--db`; `--trials 0` only
applies what the database holds), compiles the model with the best record, and times it against
numpy's matmul (OpenBLAS, one thread), both in the same run in alternating rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from autotune.apply_pass import tuned_schedules  # noqa: E402
from autotune.task import extract_tasks  # noqa: E402
from autotune.tune_model import tune_tasks  # noqa: E402
from compiler.benchmark import time_interleaved  # noqa: E402
from compiler.model import compile_model  # noqa: E402


def matmul_model(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, numpy_helper.to_array(w)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument(
        "--db", help="tuning database to resume from and keep (default: a temporary one)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    model, w = matmul_model(args.size)
    db, _tmp = bench_env.scratch_db(args.db)
    use_db = db if args.trials > 0 or args.db else None  # --trials 0 alone: default schedules
    t0 = time.perf_counter()
    if args.trials > 0:
        summary = tune_tasks(extract_tasks(model), db, args.trials, seed=args.seed)
        print(summary.table(), file=sys.stderr)
    tune_s = time.perf_counter() - t0
    compiled = compile_model(model, schedules=tuned_schedules(use_db))
    x = np.random.default_rng(1).standard_normal((args.size, args.size)).astype(np.float32)
    ours = compiled.run({"x": x})["y"]
    err = float(np.max(np.abs(ours - x @ w)) / np.max(np.abs(x @ w)))
    t = time_interleaved(
        {"ziggurat": compiled.runner({"x": x}), "numpy": lambda: x @ w}, args.seconds
    )
    flop = 2.0 * args.size**3
    result = {
        "size": args.size,
        "trials": args.trials,
        "tune_s": round(tune_s, 1),
        "ziggurat_gflops": round(flop / t["ziggurat"] / 1e9, 1),
        "numpy_gflops": round(flop / t["numpy"] / 1e9, 1),
        "ratio_vs_numpy": round(t["numpy"] / t["ziggurat"], 3),
        "max_rel_err": err,
        "cpu": bench_env.cpu_description(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:<18}{v}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
