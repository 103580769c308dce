"""Not a unit test: what a package saves at deployment. For one model, in the same run: compile
time (compile_model), save time and size, then load_package against onnxruntime's
InferenceSession creation, each in fresh processes.

Run: python tests/bench/bench_package_load.py [--model zoo:resnet18|model.onnx] [--threads 1]
     [--repeat 3] [--json]

Cold: a fresh Python process, timed from inside it: importing the runtime (compiler.package, or
onnxruntime) plus loading the package (creating the session). Warm: a second load (session) in
that same process, imports done. Each figure is the minimum over --repeat processes. The first
run of the loaded model is timed too (first-touch of the weights), and the loading process
reports whether xDSL or ONNX got imported (they must not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import onnx  # noqa: E402

from compiler import zoo  # noqa: E402
from compiler.model import compile_model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

_LOAD = """
import sys, time, json
t0 = time.perf_counter()
from compiler.package import load_package
import numpy as np
t1 = time.perf_counter()
model = load_package(sys.argv[1], threads=int(sys.argv[3]))
t2 = time.perf_counter()
with np.load(sys.argv[2]) as data:
    feeds = {k: data[k] for k in data.files}
model.run(feeds)
t3 = time.perf_counter()
again = load_package(sys.argv[1], threads=int(sys.argv[3]))
t4 = time.perf_counter()
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"xdsl", "onnx", "passes", "dialects"})
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_run_s": t3 - t2,
                  "warm_load_s": t4 - t3, "heavy_imports": heavy}))
"""

_SESSION = """
import sys, time, json
t0 = time.perf_counter()
import onnxruntime as ort
t1 = time.perf_counter()
def session():
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(sys.argv[2])
    return ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
s = session()
t2 = time.perf_counter()
s2 = session()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "warm_load_s": t3 - t2}))
"""


def _child(code: str, *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
        env={**os.environ},
    )
    if proc.returncode:
        raise SystemExit(f"bench_package_load: the child process failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(runs: list[dict]) -> dict:
    """Per field, the minimum over runs (the other fields as the first run has them)."""
    best = dict(runs[0])
    for key, value in best.items():
        if isinstance(value, float):
            best[key] = min(r[key] for r in runs)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="zoo:resnet18", help="zoo:NAME or an .onnx file")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import numpy as np

    proto = zoo.model_from_arg(args.model)
    proto = proto if isinstance(proto, onnx.ModelProto) else onnx.load(proto)
    with tempfile.TemporaryDirectory(prefix="ziggurat-bench-") as tmp:
        os.chmod(tmp, 0o700)
        onnx_path, pkg, inputs = Path(tmp) / "m.onnx", Path(tmp) / "m.zpkg", Path(tmp) / "in.npz"
        onnx.save(proto, onnx_path)
        np.savez(inputs, **zoo.random_inputs(proto))

        t0 = time.perf_counter()
        compiled = compile_model(proto, threads=args.threads)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        compiled.save(pkg)
        save_s = time.perf_counter() - t0

        repeat = max(args.repeat, 1)
        load = _best(
            [_child(_LOAD, str(pkg), str(inputs), str(args.threads)) for _ in range(repeat)]
        )
        ort_ = _best([_child(_SESSION, str(onnx_path), str(args.threads)) for _ in range(repeat)])

        cold, ort_cold = load["import_s"] + load["load_s"], ort_["import_s"] + ort_["load_s"]
        row = {
            "model": args.model,
            "cpu": bench_env.cpu_description(),
            "threads": args.threads,
            "compile_s": round(compile_s, 3),
            "save_s": round(save_s, 3),
            "package_mb": round(pkg.stat().st_size / 1e6, 2),
            "onnx_mb": round(onnx_path.stat().st_size / 1e6, 2),
            "load": {k: round(v, 4) if isinstance(v, float) else v for k, v in load.items()},
            "ort_session": {k: round(v, 4) for k, v in ort_.items()},
            "cold_load_s": round(cold, 4),
            "ort_cold_s": round(ort_cold, 4),
            "ratio_compile_over_load": round(compile_s / load["load_s"], 1),
            "ratio_cold_load_over_ort_cold": round(cold / ort_cold, 3),
            "ratio_load_over_ort_session": round(load["load_s"] / ort_["load_s"], 3),
            "ratio_warm_load_over_ort_warm": round(load["warm_load_s"] / ort_["warm_load_s"], 3),
        }
    if args.json:
        print(json.dumps(row))
        return 0
    print(f"{row['model']} on {row['cpu']}, {args.threads} thread(s)")
    print(f"  compile_model            {compile_s:9.3f} s")
    print(
        f"  save                     {save_s:9.3f} s   ({row['package_mb']} MB; .onnx {row['onnx_mb']} MB)"
    )
    print(
        f"  load_package, cold       {cold:9.4f} s   (import {load['import_s']:.4f} + load "
        f"{load['load_s']:.4f}); first run {load['first_run_s']:.4f} s"
    )
    print(f"  load_package, warm       {load['warm_load_s']:9.4f} s")
    print(
        f"  ort session, cold        {ort_cold:9.4f} s   (import {ort_['import_s']:.4f} + session "
        f"{ort_['load_s']:.4f})"
    )
    print(f"  ort session, warm        {ort_['warm_load_s']:9.4f} s")
    print(f"  compile / load                    {row['ratio_compile_over_load']}x")
    print(f"  load / ort session (same process) {row['ratio_load_over_ort_session']}")
    print(f"  cold load / cold ort              {row['ratio_cold_load_over_ort_cold']}")
    print(f"  warm load / warm ort              {row['ratio_warm_load_over_ort_warm']}")
    print(f"  heavy modules imported by the loader: {load['heavy_imports'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
