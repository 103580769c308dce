"""autotune/space.py: every config is a valid schedule that replays as pass specs."""

from __future__ import annotations

import functools
import json
import math
import random
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.linalg import ops as linalg

from autotune.space import SearchSpace, max_accumulators
from autotune.task import Task, anchor_info, extract_tasks, kernel_module
from compiler import zoo
from compiler.backends.llvm_cpu.compile import compile_module
from compiler.model import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.runtime import aligned_copy
from dialects.attributes import PRIVATE_ARGS_ATTR
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.schedule.cpu_target import cpu_target
from passes.schedule.default import default_schedule
from passes.schedule.rules import MAX_PANEL_ELEMENTS, panel_shape
from passes.schedule.space import pack_space

WIDTH = 16  # fixed, so the tests do not depend on the host's vector unit


@functools.cache
def tasks_of(name: str) -> tuple[Task, ...]:
    return tuple(extract_tasks({"small_cnn": zoo.small_cnn, "mlp": zoo.mlp}[name]()))


def task(kind: str) -> Task:
    model, prefix = {
        "conv": ("small_cnn", "conv"),
        "pool": ("small_cnn", "pool"),
        "matmul": ("mlp", "matmul 4x128 k128"),
        "elementwise": ("mlp", "elementwise"),
    }[kind]
    return next(t for t in tasks_of(model) if t.name.startswith(prefix))


KINDS = ["conv", "matmul", "elementwise", "pool"]


def anchor_schedule(module, t: Task):
    generics = [op for op in module.walk() if isinstance(op, linalg.GenericOp)]
    return generics[t.anchor].attributes[SCHEDULE_ATTR_NAME].schedule()


@pytest.mark.parametrize("kind", KINDS)
def test_samples_are_valid_and_replay(kind: str) -> None:
    t = task(kind)
    info = anchor_info(t)
    space = SearchSpace(info, WIDTH)
    assert space.size > 1
    rng = random.Random(0)
    module = kernel_module(t)
    ctx = make_context()
    for _ in range(30):
        cfg = space.sample(rng)
        assert space.contains(cfg)
        assert list(cfg) == sorted(cfg)
        assert json.loads(json.dumps(cfg)) == cfg
        s = space.to_schedule(cfg)
        s.check(info.num_loops)
        assert space.accumulators(cfg) <= space.max_accumulators == max_accumulators(space.cpu)
        # replayed on a module that already holds another config's schedule
        run_passes(ctx, module, space.to_passes(cfg, t.anchor, "kernel"))
        assert anchor_schedule(module, t) == s
        # and on a fresh, unscheduled kernel
        fresh = kernel_module(t)
        run_passes(ctx, fresh, space.to_passes(cfg, t.anchor))
        assert anchor_schedule(fresh, t) == s


def test_replay_with_ziggurat_opt(tmp_path) -> None:
    t = task("conv")
    space = SearchSpace(anchor_info(t), WIDTH)
    cfg = space.sample(random.Random(3))
    src = tmp_path / "kernel.mlir"
    src.write_text(str(kernel_module(t)))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler.cli.opt",
            str(src),
            "-p",
            ",".join(space.to_passes(cfg, t.anchor)),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    from xdsl.parser import Parser

    module = Parser(make_context(), out).parse_module()
    assert anchor_schedule(module, t) == space.to_schedule(cfg)


@pytest.mark.parametrize("kind", KINDS)
def test_mutate_stays_in_space(kind: str) -> None:
    space = SearchSpace(anchor_info(task(kind)), WIDTH)
    rng = random.Random(1)
    cfg = space.sample(rng)
    seen = {space.key(cfg)}
    for _ in range(300):
        new = space.mutate(cfg, rng)
        assert space.contains(new), new
        assert new != cfg
        space.to_schedule(new).check(space.n)
        cfg = new
        seen.add(space.key(cfg))
    assert len(seen) > 50 or len(seen) > space.size // 2


@pytest.mark.parametrize("kind", KINDS)
def test_default_config_matches_default_schedule(kind: str) -> None:
    info = anchor_info(task(kind))
    space = SearchSpace(info, WIDTH)
    cfg = space.default_config()
    assert space.contains(cfg)
    assert space.to_schedule(cfg) == default_schedule(info, WIDTH)


def test_space_hash_stable_and_sensitive() -> None:
    conv, mm = anchor_info(task("conv")), anchor_info(task("matmul"))
    zen4 = cpu_target("znver4")  # a fixed CPU: the host's register file may be either size
    h = SearchSpace(conv, WIDTH, cpu=zen4).space_hash()
    assert h == SearchSpace(conv, WIDTH, cpu=zen4).space_hash()
    assert h == SearchSpace(anchor_info(task("conv")), WIDTH, cpu=zen4).space_hash()
    assert h != SearchSpace(conv, 8, cpu=zen4).space_hash()
    assert h != SearchSpace(mm, WIDTH, cpu=zen4).space_hash()
    # a CPU with a smaller register file allows smaller register tiles: another space
    small = replace(zen4, registers=16)
    assert SearchSpace(conv, WIDTH, cpu=small).space_hash() != h


def test_size_counts_configs_of_a_small_space() -> None:
    info = anchor_info(task("elementwise"))
    space = SearchSpace(info, WIDTH)
    rng = random.Random(0)
    seen = {space.key(space.sample(rng)) for _ in range(4000)}
    assert len(seen) == space.size


# -- the strongest check: sampled configs compute what the default schedule computes ---------


def _run(module, fn_name: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    program = compile_module(module)
    args = [aligned_copy(a) for a in inputs]
    program.function(fn_name)(*args)
    return args


def _lowered(t: Task, passes: list[str]):
    module = kernel_module(t)
    fn = next(f for f in module.ops if isinstance(f, func.FuncOp))
    fn.sym_visibility = None  # callable from Python
    run_passes(
        make_context(), module, [*passes, "convert-linalg-to-loops", *LEVELS["llvm-dialect"]]
    )
    return module


def test_sampled_conv_configs_compute_the_default_result() -> None:
    # the 16->16 conv with its fused bias, residual add and relu (a reduction long enough to tile)
    t = next(  # 16 input channels, in blocks of the host's width (NCHW16c or NCHW8c)
        t
        for t in tasks_of("small_cnn")
        if t.name.startswith("conv")
        and anchor_info(t).extents[5] * anchor_info(t).extents[-1] == 16
    )
    fn = next(f for f in kernel_module(t).ops if isinstance(f, func.FuncOp))
    private = (
        set(fn.attributes[PRIVATE_ARGS_ATTR].get_values())
        if PRIVATE_ARGS_ATTR in fn.attributes
        else set()
    )
    rng_np = np.random.default_rng(0)
    inputs = []
    for typ in fn.function_type.inputs.data:
        shape = typ.get_shape()
        strides = typ.get_strides() or [1]
        size = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
        inputs.append(rng_np.standard_normal(size).astype(np.float32))
    reference = _run(_lowered(t, []), "kernel", inputs)
    space = SearchSpace(anchor_info(t))  # the host's width: the code must run here
    rng = random.Random(7)
    configs = [space.sample(rng) for _ in range(4)]
    assert any(cfg["tile"][4] for cfg in configs)  # a tiled reduction is among them
    configs.append(
        {**space.default_config(), "vector": -1, "reg": [1] * space.n, "tile": [0] * space.n}
    )
    for cfg in configs:
        got = _run(_lowered(t, space.to_passes(cfg, t.anchor)), "kernel", inputs)
        for i, (a, b) in enumerate(zip(got, reference)):
            if i in private:
                continue
            np.testing.assert_allclose(
                a, b, rtol=1e-4, atol=1e-4, err_msg=f"config {space.key(cfg)} arg {i}"
            )


# -- spaces for several threads: the `parallel` knob ------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_threaded_space_has_parallel_knob(kind: str) -> None:
    t = task(kind)
    info = anchor_info(t)
    one, two = SearchSpace(info, WIDTH), SearchSpace(info, WIDTH, threads=2)
    assert "parallel" not in one.default_config()  # one-thread configs (and records) are unchanged
    assert two.space_hash() != one.space_hash()
    assert two.size > one.size
    rng = random.Random(5)
    seen = set()
    cfg = two.sample(rng)
    for _ in range(200):
        cfg = two.mutate(cfg, rng)
        assert two.contains(cfg) and not one.contains(cfg)
        s = two.to_schedule(cfg)
        assert s.parallel == cfg["parallel"] <= two.leading_parallel(cfg["order"])
        assert all(info.iterators[d] == "parallel" for d in s.order[: s.parallel])
        seen.add(cfg["parallel"])
    assert len(seen) > 1
    passes = two.to_passes(cfg, t.anchor)
    assert passes[-1].startswith(f"parallelize{{loops={cfg['parallel']}")
    fresh = kernel_module(t)
    run_passes(make_context(), fresh, passes)
    assert anchor_schedule(fresh, t) == two.to_schedule(cfg)


def test_threaded_default_config_is_parallel() -> None:
    info = anchor_info(task("conv"))
    cfg = SearchSpace(info, WIDTH, threads=2).default_config()
    assert cfg["parallel"] >= 1


def test_parallel_conv_configs_compute_the_default_result() -> None:
    from compiler import parallel_runtime

    t = next(t for t in tasks_of("small_cnn") if t.name.startswith("conv"))
    fn = next(f for f in kernel_module(t).ops if isinstance(f, func.FuncOp))
    private = (
        set(fn.attributes[PRIVATE_ARGS_ATTR].get_values())
        if PRIVATE_ARGS_ATTR in fn.attributes
        else set()
    )
    rng_np = np.random.default_rng(1)
    inputs = []
    for typ in fn.function_type.inputs.data:
        strides = typ.get_strides() or [1]
        inputs.append(
            rng_np.standard_normal(
                1 + sum((s - 1) * st for s, st in zip(typ.get_shape(), strides))
            ).astype(np.float32)
        )
    reference = _run(_lowered(t, []), "kernel", inputs)
    space = SearchSpace(anchor_info(t), threads=2)
    rng = random.Random(11)
    configs = [c for c in (space.sample(rng) for _ in range(40)) if c["parallel"]][:4]
    assert configs
    before = parallel_runtime.get_num_threads()
    parallel_runtime.set_num_threads(2)
    try:
        for cfg in [space.default_config(), *configs]:
            got = _run(_lowered(t, space.to_passes(cfg, t.anchor)), "kernel", inputs)
            for i, (a, b) in enumerate(zip(got, reference)):
                if i not in private:
                    np.testing.assert_allclose(
                        a, b, rtol=1e-4, atol=1e-4, err_msg=f"config {space.key(cfg)} arg {i}"
                    )
    finally:
        parallel_runtime.set_num_threads(before)


def test_pack_knob_comes_from_the_schedule_space_and_panels_fit() -> None:
    info = anchor_info(task("matmul"))
    space = SearchSpace(info, WIDTH)
    assert space.packs == pack_space(info) == [[], [0], [1], [0, 1]]
    rng = random.Random(2)
    packed = 0
    cfg = space.sample(rng)
    for _ in range(300):
        cfg = space.mutate(cfg, rng)
        s = space.to_schedule(cfg)
        assert all(math.prod(panel_shape(info, i, s)) <= MAX_PANEL_ELEMENTS for i in s.pack)
        packed += bool(cfg["pack"])
    assert packed > 0
    cfg = {**space.default_config(), "pack": [1]}
    assert space.contains(cfg) and space.to_passes(cfg, 0)[4] == "pack{operands=1 op=0}"


def test_configs_enumerates_exactly_the_space() -> None:
    space = SearchSpace(anchor_info(task("elementwise")), WIDTH)
    listed = [space.key(c) for c in space.configs()]
    assert len(listed) == len(set(listed)) == space.size
    rng = random.Random(4)
    assert {space.key(space.sample(rng)) for _ in range(3000)} <= set(listed)
