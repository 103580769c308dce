"""Not a unit test: how steady one kernel's timing is at one and at two threads on this machine.

Run: python tests/bench/bench_thread_noise.py MODEL KERNEL [--batches 4]

Times the default schedule of the model's first task whose name contains KERNEL (e.g.
"conv 1x16x14x14x16 k3x3") the way the tuner measures a candidate (`autotune.measure.measure`:
4 candidates a batch, 5 repeats each, the best repeat per candidate), alternating one-thread
and two-thread batches. Two-thread batches that differ far more than one-thread ones mean the
machine, not the candidates, decides a two-thread measurement (a vCPU the host takes away).
"""

from __future__ import annotations

import argparse

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

from autotune.measure import measure  # noqa: E402
from autotune.space import SearchSpace  # noqa: E402
from autotune.task import anchor_info, extract_tasks  # noqa: E402
from compiler import zoo  # noqa: E402
from compiler.frontend.onnx import load_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="an .onnx file or zoo:NAME")
    ap.add_argument("kernel", help="part of a task name, as `ziggurat tune` prints them")
    ap.add_argument("--batches", type=int, default=4, help="batches per thread count")
    args = ap.parse_args(argv)
    tasks = extract_tasks(load_model(zoo.model_from_arg(args.model)))
    task = next((t for t in tasks if args.kernel in t.name), None)
    if task is None:
        ap.error(f"no task named like {args.kernel!r}: {', '.join(t.name for t in tasks)}")
    print(f"cpu: {bench_env.cpu_description()}\ntask: {task.name}")
    for _ in range(args.batches):
        for threads in (1, 2):
            space = SearchSpace(anchor_info(task), threads=threads)
            passes = space.to_passes(space.default_config(), task.anchor)
            results = measure(task, [passes] * 4, repeat=5, threads=threads)
            us = [f"{min(r.costs) * 1e6:7.1f}" if r.costs else "  error" for r in results]
            print(f"{threads} thread(s): {' '.join(us)} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
