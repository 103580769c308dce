"""Stock xDSL tooling works on ziggurat's schedule passes.

xDSL's interactive tools ask every pass for `ModulePass.schedule_space(ctx, module)`, a
classmethod returning the pass instances that change the module. The schedule passes used to
define a static `schedule_space` of their own with other parameters (the tuner's knob
enumeration, now passes/schedule/space.py), which crashed there with
`'Context' object has no attribute 'extents'`.
"""

from __future__ import annotations

import inspect

import pytest
from xdsl.interactive.passes import get_condensed_pass_list
from xdsl.passes import ModulePass

from passes.transforms.default_schedule import DefaultSchedulePass
from passes.transforms.interchange import InterchangePass
from passes.transforms.pack import PackPass
from passes.transforms.parallelize import ParallelizePass
from passes.transforms.split_reduction import SplitReductionPass
from passes.transforms.tile import TilePass
from passes.transforms.unroll_jam import UnrollJamPass
from passes.transforms.vectorize import VectorizePass
from tests.support.schedule_kernels import context, matmul, parse

SCHEDULE_PASSES: tuple[type[ModulePass], ...] = (
    DefaultSchedulePass,
    TilePass,
    InterchangePass,
    UnrollJamPass,
    VectorizePass,
    PackPass,
    ParallelizePass,
    SplitReductionPass,
)
SCHEDULED = "tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16"


@pytest.mark.parametrize("pass_type", SCHEDULE_PASSES, ids=lambda p: p.name)
def test_schedule_space_is_xdsls(pass_type: type[ModulePass]) -> None:
    """No schedule pass overrides the hook with another signature."""
    ours, xdsls = pass_type.schedule_space, ModulePass.schedule_space
    assert inspect.signature(ours) == inspect.signature(xdsls)


@pytest.mark.parametrize(
    "source", [matmul(), matmul(schedule=SCHEDULED)], ids=["bare", "scheduled"]
)
@pytest.mark.parametrize("pass_type", SCHEDULE_PASSES, ids=lambda p: p.name)
def test_schedule_space_runs_through_xdsls_api(pass_type: type[ModulePass], source: str) -> None:
    module = parse(source)
    before = str(module)
    space = pass_type.schedule_space(context(), module)
    assert all(isinstance(p, pass_type) for p in space)
    assert str(module) == before  # xDSL applies the candidates to a clone


def test_the_condensed_pass_list_offers_what_changes_the_module() -> None:
    """What xDSL's interactive app lists: default-schedule for a kernel without a schedule, and
    parallelize (its default instance, loops=1) for one with a schedule."""
    all_passes = tuple((p.name, p) for p in SCHEDULE_PASSES)
    bare = get_condensed_pass_list(context(), parse(matmul()), all_passes)
    assert "default-schedule" in [str(p) for p in bare]
    scheduled = get_condensed_pass_list(context(), parse(matmul(schedule=SCHEDULED)), all_passes)
    assert "default-schedule" not in [str(p) for p in scheduled]
    assert "parallelize" in [str(p) for p in scheduled]
