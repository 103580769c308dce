"""Not a unit test: prefill and per-token decode latency of KV-cache decoders against onnxruntime
on the same model, in the same run (issue 30).

For each decoder of tests/support/transformer_models.py (full size; random weights) with a KV
cache: the prefill of a PROMPT-token prompt (empty past), then one decode step (one new token)
at each past length. ziggurat compiles each shape (static shapes: one program per row here;
`compiler/generate.py` serves a whole generation with two, every step at its capacity's past
length, which is the row of that length). Best-of latency, engines timed in alternating rounds,
one thread unless --threads. With --once, also the model compiled once for every size (`?`
dims: compiler/generate_growing.py's program), timed in the same rounds.

Run: python tests/bench/bench_decode.py [--models gpt2 llama] [--prompt 128] [--past 16 128 512]
     [--once]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.host import cpu_description  # noqa: E402
from compiler.model import compile_model  # noqa: E402
from compiler.symbolic_model import compile_symbolic  # noqa: E402
from tests.support import transformer_models as tm  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["gpt2", "llama"], choices=sorted(tm.FULL))
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--past", nargs="*", type=int, default=[16, 128, 512])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--small", action="store_true", help="the test-sized configs")
    ap.add_argument("--once", action="store_true", help="also the model compiled once")
    args = ap.parse_args(argv)
    print(f"cpu: {cpu_description()}; threads {args.threads}")
    if args.once:
        print("| model | call | ziggurat ms | once ms | onnxruntime ms | ratio | once ratio |")
        print("|---|---|---|---|---|---|---|")
    else:
        print("| model | call | ziggurat ms | onnxruntime ms | ratio |")
        print("|---|---|---|---|---|")
    for kind in args.models:
        cfg = tm.with_cache((tm.SMALL if args.small else tm.FULL)[kind])
        model = tm.build(cfg)
        sess = ort_session(model.SerializeToString(), args.threads)
        symbolic = compile_symbolic(model, one_compile=True, threads=args.threads)
        once = symbolic.once() if args.once else None
        rows = [(f"prefill {args.prompt}", args.prompt, 0)]
        rows += [(f"decode, past {p}", 1, p) for p in args.past]
        for label, seq, past in rows:
            feeds = tm.feeds(cfg, 1, seq, past)
            shapes = {k: list(v.shape) for k, v in feeds.items()}
            compiled = compile_model(model, shapes, threads=args.threads)
            engines = {"z": compiled.runner(feeds), "o": lambda f=feeds, s=sess: s.run(None, f)}
            if once is not None:
                sizes = symbolic.bind({k: v.shape for k, v in feeds.items()})
                engines["once"] = once.runner(feeds, symbolic.output_shapes(once, sizes))
            best = time_interleaved(engines, min_seconds=args.seconds)
            z, o = best["z"] * 1e3, best["o"] * 1e3
            if once is None:
                print(f"| {kind} | {label} | {z:.2f} | {o:.2f} | {z / o:.2f}x |", flush=True)
                continue
            w = best["once"] * 1e3
            print(
                f"| {kind} | {label} | {z:.2f} | {w:.2f} | {o:.2f} | {z / o:.2f}x | {w / o:.2f}x |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
