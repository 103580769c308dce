"""Not a unit test: what `pack-weights` (passes/transforms/pack_weights.py) buys, by the number
of rows M of the products: chains of 768 x 3072 / 3072 x 768 matmuls with constant weights and a
relu between them, compiled with the graph level as it is and with pack-weights left out, against
onnxruntime on the same model, in the same run (best of alternating rounds, one thread).

Run: python tests/bench/bench_pack_weights.py [--rows 1 3 16 48 128] [--products 8]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["ZIGGURAT_NO_CACHE"] = "1"  # both variants compile afresh

import compiler.levels as levels  # noqa: E402
from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.host import cpu_description  # noqa: E402
from compiler.model import compile_model  # noqa: E402

WIDTHS = (768, 3072)


def chain(rows: int, products: int) -> onnx.ModelProto:
    """x [rows, 768] through `products` matmuls alternating 768 -> 3072 -> 768, relu between."""
    rng = np.random.default_rng(0)
    nodes, inits, cur = [], [], "x"
    for i in range(products):
        k, n = WIDTHS[i % 2], WIDTHS[(i + 1) % 2]
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        cur = f"r{i}"
    out = WIDTHS[products % 2]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, WIDTHS[0]])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [rows, out])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="*", type=int, default=[1, 3, 16, 48, 128])
    ap.add_argument("--products", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args(argv)
    mb = sum(WIDTHS[0] * WIDTHS[1] * 4 for _ in range(args.products)) / 1e6
    print(f"cpu: {cpu_description()}; one thread; {args.products} products, {mb:.0f} MB of weights")
    print("| rows M | as [K, N] ms | packed ms | onnxruntime ms | packed / ort |")
    print("|---|---|---|---|---|")
    graph = levels.LEVELS["graph"]
    for rows in args.rows:
        model = chain(rows, args.products)
        feeds = {"x": np.random.default_rng(1).standard_normal((rows, 768)).astype(np.float32)}
        fns = {}
        for name, passes in (
            ("packed", graph),
            ("plain", tuple(p for p in graph if p != "pack-weights")),
        ):
            levels.LEVELS["graph"] = passes
            fns[name] = compile_model(model).runner(feeds)
        levels.LEVELS["graph"] = graph
        sess = ort_session(model.SerializeToString(), 1)
        fns["ort"] = lambda s=sess, f=feeds: s.run(None, f)
        best = {k: v * 1e3 for k, v in time_interleaved(fns, min_seconds=args.seconds).items()}
        print(
            f"| {rows} | {best['plain']:.2f} | {best['packed']:.2f} | {best['ort']:.2f} "
            f"| {best['packed'] / best['ort']:.2f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
