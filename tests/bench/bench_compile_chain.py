"""Not a unit test: compile time of long chains of elementwise ops, which must grow linearly with
the number of ops (issue 28, point 8: a 2,000-op chain must compile in less than twice the time
of a 1,000-op chain).

Run: python tests/bench/bench_compile_chain.py [--sizes 250,500,1000,2000] [--width 1024] [--json]

Each size is compiled to machine code (import, every level, LLVM) in a fresh subprocess, so no
cache of one compilation helps the next. The chain cycles through Add/Mul with a constant,
Add/Mul with a second input, Relu, Sigmoid and Tanh on a 1 x width float32 tensor; every
compiled model is checked against onnxruntime. Printed: seconds per size, split by level
(CompiledModel.timings), and the ratio t(2N)/t(N) for every size whose double was also run, in
all and without machine code: the chain's fusion groups repeat, so LLVM compiles the same dozen
distinct kernels at every size (a constant, and on a shared machine the noisiest part).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

OPSET = 17
CYCLE = ("Add", "Mul", "Relu", "AddY", "Sigmoid", "MulY", "Tanh", "Add", "Mul")
"""The ops the chain repeats; `AddY`/`MulY` take the second model input. Values stay bounded."""


def chain_model(n: int, width: int = 1024) -> onnx.ModelProto:
    """An ONNX model of `n` chained elementwise ops on [1, width] float32 inputs X and Y."""
    rng = np.random.default_rng(n)
    nodes, inits = [], []
    prev = "X"
    for i in range(n):
        kind = CYCLE[i % len(CYCLE)]
        out = f"t{i}" if i < n - 1 else "Z"
        if kind in ("Add", "Mul"):
            lo, hi = (-0.1, 0.1) if kind == "Add" else (0.9, 1.1)
            c = rng.uniform(lo, hi, size=(1, width)).astype(np.float32)
            inits.append(helper.make_tensor(f"c{i}", TensorProto.FLOAT, c.shape, c.ravel()))
            nodes.append(helper.make_node(kind, [prev, f"c{i}"], [out]))
        elif kind in ("AddY", "MulY"):
            nodes.append(helper.make_node(kind[:3], [prev, "Y"], [out]))
        else:
            nodes.append(helper.make_node(kind, [prev], [out]))
        prev = out
    spec = [1, width]
    graph = helper.make_graph(
        nodes,
        f"chain{n}",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, spec),
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, spec),
        ],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, spec)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


MACHINE_CODE = "llvm+machine-code"
"""The level whose time is LLVM's on the distinct kernels: about constant along a chain (its
fusion groups repeat), and the noisiest figure on a shared machine."""


@dataclass
class Result:
    ops: int
    compile_s: float
    levels_s: dict[str, float]
    max_abs_err: float

    @property
    def passes_s(self) -> float:
        """Everything but machine code: import and the passes down to the loops level."""
        return sum(v for k, v in self.levels_s.items() if k != MACHINE_CODE)


def measure(n: int, width: int) -> Result:
    """Compile a chain of `n` ops in this process and check it against onnxruntime."""
    import onnxruntime as ort

    from compiler.model import compile_model

    model = chain_model(n, width)
    t0 = time.perf_counter()
    compiled = compile_model(model)
    seconds = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    feeds = {
        "X": rng.standard_normal((1, width)).astype(np.float32),
        "Y": rng.uniform(0.5, 1.0, (1, width)).astype(np.float32),
    }
    ours = compiled.run(feeds)["Z"]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, feeds)
    return Result(
        ops=n,
        compile_s=round(seconds, 3),
        levels_s={k: round(v, 3) for k, v in compiled.timings.items()},
        max_abs_err=float(np.max(np.abs(ours - ref))),
    )


def run_fresh(n: int, width: int) -> Result:
    """`measure` in a fresh interpreter (no caches shared between sizes)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", str(n), "--width", str(width)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"size {n} failed:\n{done.stderr}")
    return Result(**json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="250,500,1000,2000", help="chain lengths, comma-separated")
    ap.add_argument("--width", type=int, default=1024, help="tensor width (shape [1, width])")
    ap.add_argument("--same-process", action="store_true", help="no subprocess per size")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's single size
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(asdict(measure(args.one, args.width))))
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results: dict[int, Result] = {}
    for n in sizes:
        r = measure(n, args.width) if args.same_process else run_fresh(n, args.width)
        results[n] = r
        if not args.json:
            levels = ", ".join(f"{k} {v:.2f}" for k, v in r.levels_s.items())
            print(f"{n:>6} ops  {r.compile_s:>8.2f} s   ({levels})", flush=True)
    doubled = [n for n in sizes if 2 * n in results]
    ratios = {
        f"{2 * n}/{n}": round(results[2 * n].compile_s / results[n].compile_s, 3) for n in doubled
    }
    pass_ratios = {
        f"{2 * n}/{n}": round(results[2 * n].passes_s / results[n].passes_s, 3) for n in doubled
    }
    worst = max(r.max_abs_err for r in results.values())
    out = {
        "cpu": bench_env.cpu_description(),
        "width": args.width,
        "results": [asdict(r) for r in results.values()],
        "ratios": ratios,
        "ratios_without_machine_code": pass_ratios,
        "max_abs_err": worst,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"cpu: {out['cpu']}")
        for k, v in ratios.items():
            a, b = k.split("/")
            print(
                f"t({a})/t({b}) = {v:.2f}   without machine code: {pass_ratios[k]:.2f} "
                f"({results[int(a)].passes_s:.2f} s / {results[int(b)].passes_s:.2f} s)"
            )
        print(f"max |ours - onnxruntime| = {worst:.2e}")
    ok = worst <= 1e-4
    if not ok:
        print(f"error: output differs from onnxruntime by {worst:.2e}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
