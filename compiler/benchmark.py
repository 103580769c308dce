"""Timing a compiled model against onnxruntime in the same run (`ziggurat bench`, `demo`, and
the scripts under tests/bench/).

The reference is not handicapped: onnxruntime runs with the same thread count, only with its
spinning pool threads off, since spinning threads timed in turns with ours would steal the cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from compiler import zoo
from compiler.errors import ReferenceModelError
from compiler.frontend.onnx import load_model
from compiler.host import cpu_description
from compiler.model import compile_model


def ort_session(model_bytes: bytes, threads: int) -> ort.InferenceSession:
    """An onnxruntime CPU session on `threads` intra-op threads, its pool spinning off."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Its pool threads spin after each run by default; timed in turns with ziggurat in one
    # process they would steal the cores from ziggurat's thread pool (1.79x -> 1.06x measured).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # the reference cannot load this model: say so, not a traceback
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ReferenceModelError(
            f"onnxruntime (the reference) cannot load the model: {first}"
        ) from None


def time_interleaved(
    fns: dict[str, Callable[[], object]], min_seconds: float = 1.0, min_rounds: int = 5
) -> dict[str, float]:
    """Best-of latency in seconds of each callable, timed in alternating rounds so that machine
    noise (a shared 2-core box) hits every engine alike; each is warmed up once first."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    rounds, start = 0, time.perf_counter()
    while rounds < min_rounds or time.perf_counter() - start < min_seconds * len(fns):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
        rounds += 1
    return best


def bench_model(
    model: str | Path | onnx.ModelProto,
    threads: int = 1,
    seconds: float = 1.0,
    optimize: bool = True,
    compare_unoptimized: bool = False,
    schedules: Sequence[str | ModulePass] = (),
    notes: dict[str, Attribute] | None = None,
    target: str = "cpu",
    layout: str = "auto",
) -> dict[str, Any]:
    """Compile, check and time a model against onnxruntime in the same run (and, with
    `compare_unoptimized`, against itself without the graph-level passes). `schedules`: passes
    applied to the kernels before the default schedules (see compiler.model.level_passes); `layout`:
    the convolutions' data layout on the CPU; `notes` receives the compiled model's `ziggurat.*`
    module attributes."""
    proto = load_model(model)  # the frontend's checks (external data rules) for a path too
    t0 = time.perf_counter()
    compiled = compile_model(
        proto,
        optimize=optimize,
        schedules=schedules,
        threads=threads,
        target=target,
        layout=layout if target == "cpu" else "NCHW",
    )
    compile_s = time.perf_counter() - t0
    if notes is not None:
        notes.update(compiled.notes)
    feeds = zoo.random_inputs(proto)
    sess = ort_session(proto.SerializeToString(), threads)
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
    ours = compiled.run(feeds)
    max_err = max(float(np.max(np.abs(ours[k] - ref[k]))) for k in ref)
    engines: dict[str, Callable[[], object]] = {
        "ziggurat": compiled.runner(feeds),
        "onnxruntime": lambda: sess.run(None, feeds),
    }
    if compare_unoptimized:
        plain = compile_model(proto, optimize=False, threads=threads)
        engines["unoptimized"] = plain.runner(feeds)
    t = time_interleaved(engines, seconds)
    result: dict[str, Any] = {
        "model": proto.graph.name,
        "target": target if target == "cpu" else f"{target} ({compiled.program.device_name})",
        "threads": threads,
        "layout": layout if target == "cpu" else "NCHW",
        "compile_s": round(compile_s, 3),
        "compile_breakdown_s": {k: round(v, 3) for k, v in compiled.timings.items()},
        "ziggurat_ms": round(t["ziggurat"] * 1e3, 3),
        "onnxruntime_ms": round(t["onnxruntime"] * 1e3, 3),
        "ratio": round(t["ziggurat"] / t["onnxruntime"], 3),
        "max_abs_err": max_err,
        "cpu": cpu_description(),
    }
    if compare_unoptimized:
        result["ziggurat_unoptimized_ms"] = round(t["unoptimized"] * 1e3, 3)
        result["graph_opt_speedup"] = round(t["unoptimized"] / t["ziggurat"], 3)
    return result


def bench_directory(
    directory: str | Path,
    threads: Sequence[int] = (1, 2),
    seconds: float = 1.0,
    target: str = "cpu",
    progress: Callable[[str], None] | None = None,
    options: Callable[[Path, int], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """bench_model for every `*.onnx` in `directory` (sorted) at each thread count: one row per
    model, {"model", "file", "runs": {threads: bench_model's result}}; a model that cannot be
    compiled or checked gets {"error": why} and the others still run. `options(path, threads)`
    gives more of bench_model's arguments per model (a tuning database's `schedules` and
    `layout`: the CLI's `--db`)."""
    rows = []
    for path in sorted(Path(directory).glob("*.onnx")):
        if progress is not None:
            progress(path.name)
        row: dict[str, Any] = {"model": path.stem, "file": str(path), "runs": {}}
        try:
            for t in threads:
                more = options(path, t) if options is not None else {}
                row["runs"][t] = bench_model(path, t, seconds, target=target, **more)
        except Exception as e:  # one bad model must not lose the others' figures
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
    return rows


def directory_table(rows: list[dict[str, Any]], threads: Sequence[int]) -> str:
    """The table `ziggurat bench DIR` prints: latency ratios against onnxruntime (< 1: ziggurat
    faster) per thread count, each engine's speed-up from the first thread count to the last,
    and the geometric mean of each ratio column over the models that ran."""
    first, last = threads[0], threads[-1]
    head = f"{'model':<28}" + "".join(
        f"{f'ours {t}t ms':>12}{f'ort {t}t ms':>12}{f'ratio {t}t':>10}" for t in threads
    )
    if len(threads) > 1:
        head += f"{'speed-up ours':>15}{'speed-up ort':>14}"
    lines = [head]
    ratios: dict[int, list[float]] = {t: [] for t in threads}
    for row in rows:
        name = row["model"][:27]
        if "error" in row:
            lines.append(f"{name:<28}error: {row['error'][:100]}")
            continue
        runs = row["runs"]
        line = f"{name:<28}"
        for t in threads:
            r = runs[t]
            ratios[t].append(r["ratio"])
            line += f"{r['ziggurat_ms']:>12.3f}{r['onnxruntime_ms']:>12.3f}{r['ratio']:>10.2f}"
        if len(threads) > 1:
            ours = runs[first]["ziggurat_ms"] / runs[last]["ziggurat_ms"]
            ort_ = runs[first]["onnxruntime_ms"] / runs[last]["onnxruntime_ms"]
            line += f"{ours:>14.2f}x{ort_:>13.2f}x"
        lines.append(line)
    geo = f"{'geomean':<28}"
    for t in threads:
        values = ratios[t]
        mean = float(np.exp(np.mean(np.log(values)))) if values else float("nan")
        geo += f"{'':>12}{'':>12}{mean:>10.2f}"
    lines.append(geo)
    lines.append(f"cpu: {cpu_description()}")
    return "\n".join(lines)
