"""autotune/gpu_space.py: every config the GPU space yields is legal on its target (no
measurement needed to find out), replays as pass specs, and the walk finds exactly the legal
configs of a small kernel."""

from __future__ import annotations

import functools
import itertools
import json
import random

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autotune.gpu_features import GPU_FEATURE_NAMES, gpu_features
from autotune.gpu_space import GpuSearchSpace
from autotune.search import RandomSearch, SimulatedAnnealing
from compiler.pass_runner import make_context, run_passes
from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_rules import check_gpu_schedule, gpu_mapping
from passes.schedule.gpu_target import gpu_target
from passes.schedule.rules import check_pack
from tests.support.schedule_kernels import ADD, conv, generics, kernel, matmul, parse, rows

KERNELS = {
    "matmul": matmul(64, 128, 64),
    "gemv": matmul(1, 512, 1000),
    "conv": conv(),
    "rows": rows(64, 1024),
}
TARGETS = ["cuda", "opencl-cpu"]


@functools.cache
def info_of(name: str) -> KernelInfo:
    return kernel(KERNELS[name])[1]


@functools.cache
def space_of(name: str, target: str) -> GpuSearchSpace:
    return GpuSearchSpace(info_of(name), gpu_target(target))


def attached(module: ModuleOp) -> Schedule:
    """The schedule attached to the module's only kernel."""
    (op,) = generics(module)
    attr = op.attributes[SCHEDULE_ATTR_NAME]
    assert isinstance(attr, ScheduleAttr)
    return attr.schedule()


def legal(space: GpuSearchSpace, cfg: dict) -> bool:
    try:
        check_gpu_schedule(space.to_schedule(cfg), space.info, space.target)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_samples_and_mutations_are_legal_and_contained(name: str, target: str) -> None:
    space = space_of(name, target)
    rng = random.Random(0)
    samples = [space.sample(rng) for _ in range(200)]
    walk = [samples[0]]
    for _ in range(200):
        walk.append(space.mutate(walk[-1], rng))
        assert walk[-1] != walk[-2]  # a mutation changes a knob
    for cfg in samples + walk:
        assert legal(space, cfg), cfg
        assert space.contains(cfg), cfg
        assert list(cfg) == sorted(cfg) and json.loads(json.dumps(cfg)) == cfg
    assert len({space.key(c) for c in samples}) > 150
    assert len({space.key(c) for c in walk}) > 100
    assert {c["split"] == 1 for c in samples} == {True, False}  # split and unsplit configs


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_default_config_is_the_default_mapping(name: str, target: str) -> None:
    space, info = space_of(name, target), info_of(name)
    cfg = space.default_config()
    assert space.contains(cfg)
    s, default = space.to_schedule(cfg), gpu_default_schedule(info, gpu_target(target))
    assert gpu_mapping(s, info) == gpu_mapping(default, info)
    assert (s.tile, s.vector, s.width, s.pack, s.split) == (
        default.tile,
        default.vector,
        default.width,
        default.pack,
        default.split,
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_passes_reproduce_the_schedule(name: str, target: str) -> None:
    space, text = space_of(name, target), KERNELS[name]
    fn = name if name in ("rows", "conv") else "matmul"
    ctx, rng = make_context(), random.Random(1)
    module = parse(text)  # keeps the previous config's schedule: replay must override it
    configs = [space.default_config()] + [space.sample(rng) for _ in range(10)]
    configs.append(next(c for c in (space.sample(rng) for _ in range(100)) if c["split"] > 1))
    configs.append(next(c for c in configs if c["split"] == 1))  # after a split: undone
    for cfg in configs:
        run_passes(ctx, module, space.to_passes(cfg, 0, fn))
        assert attached(module) == space.to_schedule(cfg), cfg
    fresh = parse(text)
    run_passes(ctx, fresh, space.to_passes(configs[1], 0))
    assert attached(fresh) == space.to_schedule(configs[1])


def test_pass_specs_name_op_and_kernel_and_set_the_split_last() -> None:
    space = space_of("rows", "cuda")
    cfg = space.default_config()
    assert cfg["split"] > 1
    specs = space.to_passes(cfg, 2, "k")
    assert [p.split("{")[0] for p in specs] == [
        "split-reduction",
        "vectorize",
        "unroll-jam",
        "tile",
        "interchange",
        "pack",
        "split-reduction",
    ]
    assert all(p.endswith('op=2 kernel="k"}') for p in specs)
    assert specs[0].startswith("split-reduction{threads=1 ")
    assert specs[-1].startswith(f"split-reduction{{threads={cfg['split']} ")
    unsplit = space.to_passes({**cfg, "split": 1}, 0)
    assert len(unsplit) == 6 and unsplit[-1] == "pack{op=0}"


def brute_force(space: GpuSearchSpace):
    """Every combination of the knobs' candidates (legal or not)."""
    n, info = space.n, space.info
    per_loop = [
        [(r, b) for r in space.regs[d] for b in space.blocks[d]]
        if d in info.parallel_loops
        else [(1, b) for b in space.blocks[d]]
        for d in range(n)
    ]
    for (v, w), split, unroll, pack, loops in itertools.product(
        space.vectors, space.splits, space.unrolls, space.packs, itertools.product(*per_loop)
    ):
        yield {
            "block": [b for _, b in loops],
            "pack": pack,
            "reg": [r for r, _ in loops],
            "split": split,
            "unroll": unroll,
            "vector": v,
            "width": w,
        }


@pytest.mark.parametrize("target", [*TARGETS, "opencl-gpu"])
@pytest.mark.parametrize("text", [rows(4, 16), matmul(4, 8, 4)], ids=["rows", "matmul"])
def test_configs_are_exactly_the_legal_combinations(text: str, target: str) -> None:
    space = GpuSearchSpace(kernel(text)[1], gpu_target(target))
    configs = list(space.configs())
    keys = [space.key(c) for c in configs]
    assert len(set(keys)) == len(keys) <= space.size
    assert all(legal(space, c) for c in configs)

    def accepted(cfg: dict) -> bool:  # legal, and replayable by the pack pass
        s = space.to_schedule(cfg)
        try:
            check_pack(s, space.info)
        except ValueError:
            return False
        return legal(space, cfg)

    everything = list(brute_force(space))
    want = {space.key(c) for c in everything if accepted(c)}
    assert set(keys) == want
    assert all(space.contains(c) == (space.key(c) in want) for c in everything[::7])


def test_contains_rejects_what_is_not_a_config() -> None:
    space = space_of("matmul", "cuda")
    cfg = space.default_config()
    assert cfg["pack"] == [0, 1]
    for bad in (
        {**cfg, "pack": [1, 0]},  # not in canonical (sorted) form
        {**cfg, "block": [64, 64, 12]},  # 12 is no staging depth candidate
        {**cfg, "reg": [4, 4, 2]},  # a reduction's register tile is 1
        {**cfg, "block": [64, 64, 64 * 2]},
        {**cfg, "block": [64, 64, 0]},  # staged panels of the whole reduction: too big
        {**cfg, "reg": [1, 1, 1]},  # 4096 threads
        {**cfg, "split": 2},  # a split stages nothing
        {**cfg, "vector": 1, "width": 8},  # not a width of the target
        {**cfg, "extra": 1},
        {k: v for k, v in cfg.items() if k != "split"},
        {**cfg, "unroll": 3.0},
    ):
        assert not space.contains(bad), bad


def test_knobs_follow_the_target_and_the_kernel() -> None:
    assert space_of("matmul", "cuda").threads == 1  # no host threads: SearchSpace's interface
    assert space_of("matmul", "cuda").packs == [[], [0], [1], [0, 1]]
    assert space_of("matmul", "opencl-cpu").packs == [[]]  # a CPU device stages nothing
    assert space_of("conv", "cuda").blocks[3] == [0, 1, 2, 4, 8]  # an outer reduction
    assert space_of("rows", "cuda").splits[:4] == [1, 2, 4, 8]
    no_combiner = GpuSearchSpace(
        kernel(rows(8, 64, "%s = arith.subf %acc, %a : f32"))[1], gpu_target("cuda")
    )
    assert no_combiner.splits == [1]
    elementwise = GpuSearchSpace(kernel(ADD)[1], gpu_target("cuda"))
    assert (elementwise.splits, elementwise.packs, elementwise.unrolls) == ([1], [[]], [1])
    rng = random.Random(0)
    assert all(legal(elementwise, elementwise.sample(rng)) for _ in range(50))


def test_space_hash_is_stable_and_names_the_target() -> None:
    h = space_of("matmul", "cuda").space_hash()
    assert h == GpuSearchSpace(kernel(KERNELS["matmul"])[1], gpu_target("cuda")).space_hash()
    assert h != space_of("matmul", "opencl-cpu").space_hash()
    assert h != GpuSearchSpace(info_of("matmul"), gpu_target("opencl-gpu")).space_hash()
    assert h != space_of("gemv", "cuda").space_hash()


class _Model:
    """A cost model that prefers more threads per block."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X[:, GPU_FEATURE_NAMES.index("log2_threads")]


def test_the_searchers_take_a_gpu_space() -> None:
    space, target = space_of("matmul", "cuda"), gpu_target("cuda")

    def feats(configs):
        return gpu_features(space.info, [space.to_schedule(c) for c in configs], target)

    measured = {space.key(space.default_config())}
    for searcher in (
        RandomSearch(space, 0),
        SimulatedAnnealing(space, _Model(), feats, 0, n_iters=20, parallel_size=16),
    ):
        batch = searcher.propose(8, measured)
        assert len(batch) == 8 and all(space.contains(c) for c in batch)
        assert not measured & {space.key(c) for c in batch}
