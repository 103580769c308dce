"""`ziggurat demo`: a built-in CNN compiled, tuned briefly, run and checked against
onnxruntime."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from compiler.cli.commands.options import db_schedules
from compiler.cli.common import non_negative_int


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: a built-in CNN compiled, tuned briefly, run and checked against onnxruntime."""
    import tempfile

    import numpy as np

    from autotune.task import extract_tasks
    from autotune.tune_model import tune_tasks
    from compiler import zoo
    from compiler.benchmark import ort_session, time_interleaved
    from compiler.model import compile_model

    proto = zoo.small_cnn(seed=args.seed)
    feeds = zoo.random_inputs(proto, seed=args.seed)
    t0 = time.perf_counter()
    default = compile_model(proto)
    compile_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "demo-tune.jsonl")
        t0 = time.perf_counter()
        if args.trials > 0:
            tune_tasks(extract_tasks(proto), db, args.trials, seed=args.seed)
        tune_s = time.perf_counter() - t0
        tuned = compile_model(proto, schedules=db_schedules(db, 1))
    sess = ort_session(proto.SerializeToString(), 1)
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    results = {"default": default.run(feeds), "tuned": tuned.run(feeds)}
    t = time_interleaved(
        {
            "default": default.runner(feeds),
            "tuned": tuned.runner(feeds),
            "onnxruntime": lambda: sess.run(None, feeds),
        },
        0.3,
    )
    ok = all(np.allclose(r[k], ref[k], rtol=1e-4, atol=1e-5) for r in results.values() for k in ref)
    err = max(float(np.max(np.abs(r[k] - ref[k]))) for r in results.values() for k in ref)
    print("ziggurat demo: built-in small CNN (conv/batch-norm/relu, residual add, pooling, gemm)")
    print(f"  {'stage':<28}{'value':>16}")
    for stage, secs in default.timings.items():
        print(f"  {'compile: ' + stage:<28}{secs * 1e3:>13.1f} ms")
    print(f"  {'compile: total':<28}{compile_s * 1e3:>13.1f} ms")
    print(f"  {'tune: ' + str(args.trials) + ' trials':<28}{tune_s:>14.1f} s")
    print(f"  {'latency default schedule':<28}{t['default'] * 1e3:>13.3f} ms")
    print(f"  {'latency tuned':<28}{t['tuned'] * 1e3:>13.3f} ms")
    print(f"  {'latency onnxruntime':<28}{t['onnxruntime'] * 1e3:>13.3f} ms")
    print(f"  {'max |ours - ort|':<28}{err:>16.2e}")
    print(f"  {'matches onnxruntime':<28}{'yes' if ok else 'NO':>16}")
    return 0 if ok else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    d = subparsers.add_parser(
        "demo", help="compile and run a built-in model, compare with onnxruntime"
    )
    d.add_argument("--seed", type=non_negative_int, default=0)
    d.add_argument(
        "--trials",
        type=non_negative_int,
        default=32,
        help="tuning measurements (0: default schedules only)",
    )
    d.add_argument(
        "--db", help="keep the tuning records in this database (default: a temporary one)"
    )
    d.set_defaults(fn=cmd_demo)
