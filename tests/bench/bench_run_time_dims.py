"""Not a unit test: what one compile for every size costs at run time. For a model with a
symbolic sequence (an encoder-block-shaped MLP: LayerNorm, two projections with GELU-like tanh,
softmax, a residual; hidden 256 by default), at each sequence length: the model compiled once
(`?` dims, kernels as static blocks), the model specialized for that length (static shapes),
and onnxruntime on the same model, timed in alternating rounds, best-of, one thread.

With --model KIND, the model is the transformer set's KIND instead (tests/support/
transformer_models.py, full size unless --small; batch 1, no KV cache), whose shape arithmetic,
embeddings and masks take run-time sizes too.

Run: python tests/bench/bench_run_time_dims.py [--hidden 256] [--seq 1 7 64 300]
     [--model bert|gpt2|llama|qwen2|t5 [--small]]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.host import cpu_description  # noqa: E402
from compiler.symbolic_model import compile_symbolic  # noqa: E402
from tests.support import transformer_models as tm  # noqa: E402


def block(hidden: int) -> onnx.ModelProto:
    """[1, seq, hidden] -> LayerNorm -> MatMul(h, 4h) -> Tanh -> MatMul(4h, h) -> Softmax ->
    Mul by x -> Add x."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    weights = {
        "g": np.ones(hidden, np.float32),
        "b": np.zeros(hidden, np.float32),
        "w1": w(hidden, 4 * hidden),
        "w2": w(4 * hidden, hidden),
    }
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
        helper.make_node("MatMul", ["n", "w1"], ["u"]),
        helper.make_node("Tanh", ["u"], ["t"]),
        helper.make_node("MatMul", ["t", "w2"], ["d"]),
        helper.make_node("Softmax", ["d"], ["s"], axis=-1),
        helper.make_node("Mul", ["s", "x"], ["m"]),
        helper.make_node("Add", ["m", "x"], ["y"]),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", f, [1, "seq", hidden])],
        [helper.make_tensor_value_info("y", f, [1, "seq", hidden])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seq", nargs="*", type=int, default=[1, 7, 64, 300])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--model", choices=sorted(tm.FULL), help="a transformer of the set instead")
    ap.add_argument("--small", action="store_true", help="its test-sized config")
    args = ap.parse_args(argv)
    cfg = (tm.SMALL if args.small else tm.FULL)[args.model] if args.model else None
    model = tm.build(cfg) if cfg is not None else block(args.hidden)
    once = compile_symbolic(model, one_compile=True, cache=False)
    per_size = compile_symbolic(model, one_compile=False, cache=False)
    sess = ort_session(model.SerializeToString(), 1)
    what = f"the transformer set's {args.model}" if cfg is not None else f"hidden {args.hidden}"
    print(f"cpu: {cpu_description()}; one thread; {what}")
    print("| seq | once ms | specialized ms | onnxruntime ms | once / specialized | once / ort |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for seq in args.seq:
        if cfg is not None:
            feeds = tm.feeds(cfg, 1, seq)
        else:
            feeds = {"x": rng.standard_normal((1, seq, args.hidden)).astype(np.float32)}
        compiled = once.once()
        shapes = once.output_shapes(compiled, once.bind({k: v.shape for k, v in feeds.items()}))
        static = per_size.for_feeds(feeds)
        expected = sess.run(None, feeds)[0]
        got = compiled.run(feeds, shapes)[once.output_names[0]]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        best = time_interleaved(
            {
                "once": compiled.runner(feeds, shapes),
                "static": static.runner(feeds),
                "ort": lambda f=feeds: sess.run(None, f),
            },
            min_seconds=args.seconds,
        )
        o, s, r = (best[k] * 1e3 for k in ("once", "static", "ort"))
        print(f"| {seq} | {o:.3f} | {s:.3f} | {r:.3f} | {o / s:.2f}x | {o / r:.2f}x |", flush=True)
    print(f"compiles: once {once.compiles}, specialized {per_size.compiles}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
