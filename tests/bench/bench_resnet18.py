"""Not a unit test: ResNet-18 (the zoo's shape, random weights) compile time and untuned single-thread
latency, ziggurat against onnxruntime (intra_op_num_threads=1) and against ziggurat without its
graph-level passes (folding, fusion), all measured in the same run, in alternating rounds.

Run: python tests/bench/bench_resnet18.py [--size 224] [--seconds 2] [--json]

Compile time is to machine code (import, every level, LLVM). Kernels are counted after
outline-kernels: identical kernels share one function, so the unique count is what LLVM compiles.
Timing and the check against onnxruntime come from `compiler.benchmark.bench_model` (what
`ziggurat bench` runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from xdsl.dialects import func  # noqa: E402

from compiler import zoo  # noqa: E402
from compiler.benchmark import bench_model  # noqa: E402
from compiler.model import import_model, lower  # noqa: E402


def kernel_stats(proto: onnx.ModelProto) -> dict[str, float | int]:
    """Kernel calls in @main and distinct kernel functions, at the loops level."""
    t0 = time.perf_counter()
    module = import_model(proto)
    lower(module, "loops")
    seconds = time.perf_counter() - t0
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    main = next(f for f in funcs if f.sym_name.data == "main")
    kernels = {f.sym_name.data for f in funcs if f.sym_name.data != "main"}
    calls = [
        op
        for op in main.walk()
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in kernels
    ]
    return {
        "kernels": len(calls),
        "unique_kernels": len(kernels),
        "lower_to_loops_s": round(seconds, 3),
    }


def model_gflop(proto: onnx.ModelProto) -> float:
    """Multiply-add FLOPs of the Conv and Gemm nodes (2 per MAC), from inferred shapes."""
    shapes = {
        vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
        for vi in [*proto.graph.input, *proto.graph.value_info, *proto.graph.output]
    }
    shapes.update({t.name: list(t.dims) for t in proto.graph.initializer})
    flop = 0
    for node in proto.graph.node:
        if node.op_type == "Conv":
            out, w = shapes[node.output[0]], shapes[node.input[1]]
            flop += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif node.op_type == "Gemm":
            out, a = shapes[node.output[0]], shapes[node.input[0]]
            flop += 2 * int(np.prod(out)) * a[-1]
    return flop / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224, help="input image size (default 224)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2.0, help="minimum timing time per engine")
    ap.add_argument(
        "--json", action="store_true", help="one JSON object on stdout instead of the table"
    )
    args = ap.parse_args(argv)

    proto = zoo.resnet18(batch=args.batch, size=args.size)
    stats = kernel_stats(proto)
    r = bench_model(proto, threads=1, seconds=args.seconds, compare_unoptimized=True)
    gflop = model_gflop(proto)
    result = {
        **r,
        "model": f"resnet18 (batch {args.batch}, {args.size}x{args.size})",
        **stats,
        "gflop": round(gflop, 3),
        "ziggurat_gflops": round(gflop / (r["ziggurat_ms"] / 1e3), 1),
        "onnxruntime_gflops": round(gflop / (r["onnxruntime_ms"] / 1e3), 1),
        "cpu": bench_env.cpu_description(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        rows = [
            ("cpu", result["cpu"], ""),
            ("model", result["model"], f"{gflop:.2f} GFLOP"),
            (
                "compile to machine code",
                f"{r['compile_s']:.2f} s",
                ", ".join(f"{k} {v:.2f}" for k, v in r["compile_breakdown_s"].items()),
            ),
            ("kernels (calls in @main)", str(stats["kernels"]), ""),
            (
                "unique kernel functions",
                str(stats["unique_kernels"]),
                "compiled once each (outline-kernels)",
            ),
            (
                "ziggurat, 1 thread",
                f"{r['ziggurat_ms']:.2f} ms",
                f"{result['ziggurat_gflops']:.1f} GFLOP/s",
            ),
            (
                "onnxruntime, 1 thread",
                f"{r['onnxruntime_ms']:.2f} ms",
                f"{result['onnxruntime_gflops']:.1f} GFLOP/s",
            ),
            (
                "ratio (ziggurat / ort)",
                f"{r['ratio']:.2f}x",
                "latency; < 1 is faster than onnxruntime",
            ),
            (
                "without graph passes",
                f"{r['ziggurat_unoptimized_ms']:.2f} ms",
                f"no folding/fusion: graph passes give {r['graph_opt_speedup']:.2f}x",
            ),
            ("max |ours - ort|", f"{r['max_abs_err']:.2e}", ""),
        ]
        for name, value, note in rows:
            print(f"{name:<26}{value:>24}   {note}")
    ok = r["max_abs_err"] <= 1e-3
    if not ok:
        print(f"error: output differs from onnxruntime by {r['max_abs_err']:.2e}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
