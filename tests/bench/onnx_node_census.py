"""Not a unit test: every ONNX backend node test with only float32/int32/int64/bool tensors, run
through ziggurat, to measure how far the backend is from passing all of them.

Run: python -m tests.bench.onnx_node_census [--jobs N] [--filter REGEX] [--timeout S] [--json F]

tests/test_onnx_backend.py runs the node tests of the supported operator families only; this
census runs the whole population that the goal names: the node tests shipped with the installed
onnx package (`onnx.backend.test.loader.load_model_tests(kind="node")`, generated in memory)
whose graph inputs and outputs are all tensors of those four element types (no sequence,
optional, string or other dtype), 1,371 of 1,884 with onnx 1.23. Tests that also use other
element types inside (initializers, value_info, Constant tensors, Cast targets) are counted and
flagged. Each test runs in its own forked process with a timeout, through `ZigguratBackend`
(prepare, run each data set, compare as onnx's runner does: same shapes and dtypes, then
rtol/atol, 1e-3/1e-7 unless the test case says otherwise), and is classified: pass, unsupported
operators, other error, wrong result, crash or timeout. Tests matching `EXCLUDED` of
tests/support/onnx_backend.py run too and are reported apart, to show whether each exclusion
is still needed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter, deque
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.loader import load_model_tests

from tests.support.onnx_backend import EXCLUDED, FAMILIES, ZigguratBackend

KEPT = {TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL}
UNSUPPORTED = re.compile(r"unsupported ONNX operators \(opset \d+\): (.*)")
CASES: list[Any] = []  # the kept test cases, inherited by the forked workers


def is_kept_tensor(value: onnx.ValueInfoProto) -> bool:
    t = value.type
    return t.WhichOneof("value") == "tensor_type" and t.tensor_type.elem_type in KEPT


def inner_other_types(model: onnx.ModelProto) -> list[str]:
    """Element types outside KEPT that the graph uses inside (top-level graph only)."""
    g = model.graph
    types = [v.type.tensor_type.elem_type for v in g.value_info if not is_kept_tensor(v)]
    types += [t.data_type for t in g.initializer]
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                types.append(a.t.data_type)
            elif node.op_type == "Cast" and a.name == "to":
                types.append(a.i)
    return sorted({TensorProto.DataType.Name(t) for t in types if t not in KEPT})


def as_array(value: Any) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def compare(got: Any, expected: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """None if `got` matches as onnx's Runner.assert_similar_outputs requires, else why not."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, r) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        if g.shape != r.shape:
            return f"output {i}: shape {g.shape}, expected {r.shape}"
        if g.dtype != r.dtype:
            return f"output {i}: dtype {g.dtype}, expected {r.dtype}"
        if not np.isclose(g, r, rtol=rtol, atol=atol, equal_nan=True).all():
            diff = np.abs(g.astype(np.float64) - r.astype(np.float64))
            ref = np.abs(r.astype(np.float64))
            rel = np.max(diff[ref > 0] / ref[ref > 0]) if (ref > 0).any() else np.inf
            return f"output {i}: max abs error {np.max(diff):.3g}, max rel error {rel:.3g}"
    return None


def run_case(index: int) -> dict[str, Any]:
    """Runs one test in this (forked) process; the result's `status` and `detail`."""
    case = CASES[index]
    try:
        rep = ZigguratBackend.prepare(case.model, "CPU")
        for inputs, outputs in case.data_sets:
            got = rep.run([as_array(x) for x in inputs])
            wrong = compare(got, [as_array(x) for x in outputs], case.rtol, case.atol)
            if wrong:
                return {"status": "wrong", "detail": wrong}
    except Exception as e:
        first = next((line for line in str(e).splitlines() if line.strip()), "")
        m = UNSUPPORTED.match(first)
        if m:
            ops = re.findall(r"([\w.]+) \(nodes? '", m.group(1))
            return {"status": "unsupported", "detail": first, "ops": ops}
        return {"status": "error", "detail": f"{type(e).__name__}: {first}"[:300]}
    return {"status": "pass", "detail": ""}


def child(index: int, conn: multiprocessing.connection.Connection, log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # the compiler's chatter, kept
    os.dup2(fd, 1)  # for a crash's message
    os.dup2(fd, 2)
    warnings.simplefilter("ignore")
    conn.send(run_case(index))
    conn.close()


def last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def crashed(proc: multiprocessing.process.BaseProcess, log: str) -> dict[str, Any]:
    proc.join()
    code = proc.exitcode or 0
    name = signal.Signals(-code).name if code < 0 else f"exit code {code}"
    return {"status": "crash", "detail": f"{name}: {last_line(log)}"}


def run_all(indices: list[int], jobs: int, timeout: float) -> dict[int, dict[str, Any]]:
    """Each test in a forked process, `jobs` at a time; Ctrl-C stops with the results so far."""
    ctx = multiprocessing.get_context("fork")
    todo, running, results = deque(indices), {}, {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            while todo or running:
                while todo and len(running) < jobs:
                    i = todo.popleft()
                    recv, send = ctx.Pipe(duplex=False)
                    log = os.path.join(tmp, f"{i}.log")
                    proc = ctx.Process(target=child, args=(i, send, log))
                    proc.start()
                    send.close()
                    running[i] = (proc, recv, log, time.monotonic())
                deadline = min(start for *_, start in running.values()) + timeout
                waits = [r for _, r, _, _ in running.values()]
                waits += [p.sentinel for p, *_ in running.values()]
                multiprocessing.connection.wait(waits, max(0.0, deadline - time.monotonic()))
                for i, (proc, recv, log, start) in list(running.items()):
                    if recv.poll():  # a result, or end of file: the child died without one
                        try:
                            result = recv.recv()
                        except EOFError:
                            result = crashed(proc, log)
                    elif not proc.is_alive():
                        result = crashed(proc, log)
                    elif time.monotonic() - start > timeout:
                        proc.kill()
                        result = {"status": "timeout", "detail": f"over {timeout:g} s"}
                    else:
                        continue
                    proc.join()
                    recv.close()
                    del running[i]
                    results[i] = {**result, "seconds": round(time.monotonic() - start, 2)}
                    if len(results) % 25 == 0 or not (todo or running):
                        elapsed = time.monotonic() - t0
                        print(
                            f"[{len(results)}/{len(indices)}] {elapsed / 60:.1f} min, "
                            f"{elapsed / len(results):.2f} s/test (wall)",
                            file=sys.stderr,
                            flush=True,
                        )
        except KeyboardInterrupt:
            print("interrupted: summary of the tests done so far", file=sys.stderr)
            for proc, *_ in running.values():
                proc.kill()
                proc.join()
    return results


def summarize(records: list[dict[str, Any]], total: int, all_node_tests: int) -> None:
    done = len(records)
    status = Counter(r["status"] for r in records)
    passed = status["pass"]
    inner = sum(1 for r in records if r["inner_other_types"])
    print(
        f"node tests with only float32/int32/int64/bool graph inputs and outputs: {total} "
        f"(of {all_node_tests} node tests; {inner} of those run use other types inside)"
    )
    if done < total:
        print(f"ran {done} of them (interrupted or filtered)")
    print(f"passed: {passed} / {done}")
    print("status: " + ", ".join(f"{k} {v}" for k, v in status.most_common()))
    family = [r for r in records if r["in_families"]]
    print(
        f"in FAMILIES of tests/test_onnx_backend.py: {len(family)}, "
        f"passed {sum(r['status'] == 'pass' for r in family)}"
    )
    excluded = [r for r in records if r["excluded"]]
    now_pass = [r["name"] for r in excluded if r["status"] == "pass"]
    print(
        f"matching EXCLUDED: {len(excluded)}, of which pass now: {len(now_pass)}"
        + "".join(f"\n  {n}" for n in now_pass)
    )
    not_excluded = [r for r in records if not r["excluded"]]
    print(
        f"not matching EXCLUDED: {len(not_excluded)}, "
        f"passed {sum(r['status'] == 'pass' for r in not_excluded)}"
    )

    blocked = Counter(op for r in records for op in r["ops"])
    sole = Counter(r["ops"][0] for r in records if len(r["ops"]) == 1)
    print(f"\nunsupported operators ({len(blocked)}): tests blocked, of which the only blocker")
    for op, n in blocked.most_common():
        print(f"  {n:5d} {sole[op]:5d}  {op}")

    groups: dict[str, list[str]] = {}
    for r in records:
        if r["status"] in ("error", "crash"):
            key = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", r["detail"]))
            groups.setdefault(key, []).append(r["name"])
    count = sum(map(len, groups.values()))
    print(f"\nother errors and crashes ({count}), first line with names as '…' and digits as N:")
    for msg, names in sorted(groups.items(), key=lambda g: -len(g[1])):
        print(f"  {len(names):5d}  {msg}  (e.g. {names[0]})")

    for kind in ("wrong", "timeout"):
        rows = [r for r in records if r["status"] == kind]
        print(f"\n{kind} ({len(rows)}):")
        for r in rows:
            mark = "  [excluded]" if r["excluded"] else ""
            print(f"  {r['name']}: {r['detail']}{mark}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--filter", help="run only the tests whose name matches this regex")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test")
    ap.add_argument("--json", help="write the per-test results to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("ZIGGURAT_COMPILE_JOBS", "1")  # the tests run in parallel instead

    with warnings.catch_warnings():  # the generators warn about overflowing casts
        warnings.simplefilter("ignore")
        all_cases = load_model_tests(kind="node")
    CASES.extend(
        c
        for c in all_cases
        if all(is_kept_tensor(v) for v in [*c.model.graph.input, *c.model.graph.output])
    )
    chosen = [i for i, c in enumerate(CASES) if not args.filter or re.search(args.filter, c.name)]
    results = run_all(chosen, max(1, args.jobs), args.timeout)

    families = [re.compile(p) for p in FAMILIES]
    excluded = [(re.compile(p), reason) for p, reason in EXCLUDED.items()]
    records = []
    for i in chosen:
        if i not in results:
            continue
        case = CASES[i]
        runner_name = case.name + "_cpu"  # the name the patterns match in onnx's runner
        records.append(
            {
                "name": case.name,
                "ops": [],
                **results[i],
                "op_types": sorted({n.op_type for n in case.model.graph.node}),
                "opset": next(
                    (o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")),
                    None,
                ),
                "inner_other_types": inner_other_types(case.model),
                "in_families": any(p.search(runner_name) for p in families),
                "excluded": next((r for p, r in excluded if p.search(runner_name)), None),
            }
        )
    summarize(records, len(CASES), len(all_cases))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
