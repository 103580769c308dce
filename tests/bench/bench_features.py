"""Not a unit test: how many schedules per second the tuner's feature extractors score.

Run: python tests/bench/bench_features.py [--n 4000] [--repeat 5]

The search scores thousands of candidate schedules per batch through the cost model, so the
analytic features (autotune/features.py for CPUs, autotune/gpu_features.py for GPUs) must run at
thousands of schedules per second; the figure used to be asserted in the unit tests, where a busy
host failed it. Reports the best of --repeat batches, with the CPU named.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import bench_env  # noqa: E402  (first: the environment, before numpy loads)

bench_env.prepare()

from autotune.features import features  # noqa: E402
from autotune.gpu_features import gpu_features  # noqa: E402
from autotune.space import SearchSpace  # noqa: E402
from passes.schedule.gpu_target import gpu_target  # noqa: E402
from tests.autotune.test_features import WIDTH, conv_info  # noqa: E402
from tests.autotune.test_gpu_space import info_of, space_of  # noqa: E402


def rate(score, schedules: list, repeat: int) -> float:
    """Schedules per second, best of `repeat` batches after one warm-up."""
    score(schedules[:10])
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        score(schedules)
        best = min(best, time.perf_counter() - t0)
    return len(schedules) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="schedules per batch")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    print(f"CPU: {bench_env.cpu_description()}")

    info = conv_info()
    space = SearchSpace(info, WIDTH)
    cpu = [space.to_schedule(space.sample(rng)) for _ in range(args.n)]
    cpu_rate = rate(lambda s: features(info, s), cpu, args.repeat)
    print(f"CPU features (conv {info.extents}): {cpu_rate:,.0f} schedules/s")

    gspace, minfo, target = space_of("matmul", "cuda"), info_of("matmul"), gpu_target("cuda")
    gpu = [gspace.to_schedule(gspace.sample(rng)) for _ in range(args.n)]
    gpu_rate = rate(lambda s: gpu_features(minfo, s, target), gpu, args.repeat)
    print(f"GPU features (CUDA matmul {minfo.extents}): {gpu_rate:,.0f} schedules/s")


if __name__ == "__main__":
    main()
