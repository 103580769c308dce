"""Not a unit test: what keeping @main's arena between calls buys (convert-memref-to-llvm's
slots). The model is compiled twice in one process, as it is and with the slots turned off
(the arena allocated and freed at every call, as before), and the two are timed in turns
against onnxruntime, with the minor page faults of a call of each.

Run: python tests/bench/bench_arena.py MODEL.onnx [--seconds 10]
(e.g. GPT-2 from `python tests/bench/transformer_set.py DIR --only gpt2`)
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["ZIGGURAT_NO_CACHE"] = "1"  # both variants compile afresh

import onnx  # noqa: E402

import passes.conversions.convert_memref_to_llvm as memref_to_llvm  # noqa: E402
from compiler.benchmark import ort_session, time_interleaved  # noqa: E402
from compiler.host import cpu_description  # noqa: E402
from compiler.model import compile_model  # noqa: E402
from compiler.zoo import random_inputs  # noqa: E402


def _faults(run) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    run()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args(argv)
    model = onnx.load(args.model)
    feeds = random_inputs(model, 0)
    kept = compile_model(model)
    marking = memref_to_llvm._mark_arenas
    memref_to_llvm._mark_arenas = lambda module: 0  # no slots: alloc and free per call
    try:
        per_call = compile_model(model)
    finally:
        memref_to_llvm._mark_arenas = marking
    session = ort_session(model.SerializeToString(), 1)
    runs = {
        "arena kept": kept.runner(feeds),
        "arena per call": per_call.runner(feeds),
        "onnxruntime": lambda: session.run(None, feeds),
    }
    for run in runs.values():
        run()  # the first call allocates
    faults = {name: _faults(run) for name, run in runs.items()}
    times = time_interleaved(runs, min_seconds=args.seconds, min_rounds=10)
    print(f"cpu: {cpu_description()}; one thread; {Path(args.model).name}")
    print("| variant | ms | minor page faults per call |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {t * 1e3:.1f} | {faults[name]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
