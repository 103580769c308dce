"""Not a unit test: what the sizes of a symbolic model cost in memory and on disk. Compiles a
model with symbolic dims at several sizes in one process (compile_symbolic, through a fresh
compile cache in a temporary directory), printing after each its compile time and the process's
anonymous and file-backed resident memory; then the cache's entries and its store of weights.

Run: python tests/bench/symbolic_sizes.py MODEL.onnx [--dim seq=7,64,300] [--fixed batch=1]
(the transformer set's models with symbolic batch and seq: tests/support/transformer_models.py)
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path


def _rss_mb() -> tuple[int, int]:
    """(anonymous, file-backed) resident MB of this process, from /proc/self/status."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in ("RssAnon:", "RssFile:"):
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields.get("RssAnon", 0) // 1024, fields.get("RssFile", 0) // 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--dim", default="seq=7,64,300", help="SYMBOL=N,N,...: the sizes to compile")
    ap.add_argument("--fixed", action="append", default=["batch=1"], help="SYMBOL=N, the others")
    args = ap.parse_args(argv)
    symbol, sizes = args.dim.split("=")
    fixed = {k: int(v) for k, v in (f.split("=") for f in args.fixed)}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ZIGGURAT_CACHE_DIR"] = cache
        from compiler.symbolic_model import compile_symbolic

        model = compile_symbolic(args.model)
        print(f"{'size':>6} {'compile s':>10} {'anon MB':>8} {'file MB':>8}")
        for n in map(int, sizes.split(",")):
            start = time.perf_counter()
            model.specialize(**fixed, **{symbol: n})
            seconds = time.perf_counter() - start
            gc.collect()  # what the process holds, not garbage waiting for the collector
            anon, file = _rss_mb()
            print(f"{n:>6} {seconds:>10.2f} {anon:>8} {file:>8}")
        packages = Path(cache) / "packages"
        entries = sorted(packages.glob("*.zpkg"))
        store = sum(p.stat().st_size for p in (packages / "weights").glob("*.npy"))
        print(
            f"cache: {len(entries)} entries of",
            ", ".join(f"{p.stat().st_size / 1e3:.0f} KB" for p in entries),
        )
        print(f"cache: weights stored once: {store / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
