"""passes/schedule/reduction_split.py, the `split` knob: which reductions can be split, the
rules a split obeys, the GPU default's choice of it, its pass, and the CPU's refusal. Split
kernels run for real in tests/compiler/backends/gpu/test_split_reduction_opencl.py."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.conversions.linalg_to_loops import ConvertLinalgToLoopsPass
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_rules import check_gpu_schedule, staged_bytes
from passes.schedule.gpu_target import gpu_target
from passes.schedule.reduction_split import check_split, combiner, split_loop
from passes.transforms.split_reduction import SplitReductionPass
from tests.support.schedule_kernels import ADD, context, generics, kernel, matmul, parse, rows


def pool(channels: int, hw: int) -> str:
    """Global pooling's sum: y[c] += x[c, h, w]."""
    return f"""
func.func @pool(%x: memref<{channels}x{hw}x{hw}xf32>, %y: memref<{channels}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(c, h, w) -> (c, h, w)>, affine_map<(c, h, w) -> (c)>],
                  iterator_types = ["parallel", "reduction", "reduction"]}}
      ins(%x : memref<{channels}x{hw}x{hw}xf32>) outs(%y : memref<{channels}xf32>) {{
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


@pytest.mark.parametrize(
    ("body", "identity"),
    [
        ("%s = arith.addf %acc, %a : f32", 0.0),
        ("%s = arith.addf %a, %acc : f32", 0.0),
        ("%s = arith.maximumf %acc, %a : f32", -math.inf),
        ("%s = arith.minnumf %acc, %a : f32", math.inf),
        ("%s = arith.mulf %acc, %a : f32", 1.0),
        ("%e = math.exp %a : f32\n    %s = arith.addf %acc, %e : f32", 0.0),
    ],
)
def test_combiners_and_their_identities(body: str, identity: float) -> None:
    op, _ = kernel(rows(4, 64, body))
    found = combiner(op.body.block)
    assert found is not None and found.identity == identity


@pytest.mark.parametrize(
    "body",
    [
        "%s = arith.subf %acc, %a : f32",  # not associative
        "%t = arith.mulf %acc, %acc : f32\n    %s = arith.addf %t, %a : f32",  # out read twice
        "%t = arith.addf %acc, %a : f32\n    %s = arith.mulf %t, %a : f32",  # out inside
    ],
)
def test_bodies_without_a_combiner_are_refused(body: str) -> None:
    op, info = kernel(rows(4, 64, body))
    assert combiner(op.body.block) is None
    s = Schedule((0, 0), (0, 1), (1, 1), split=4)
    with pytest.raises(ValueError, match="not out = combine.out, value. with a known identity"):
        check_split(s, info)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"split": 5}, "split = 5 does not divide loop 1 .the innermost reduction loop"),
        ({"vector": 0, "width": 4, "unroll": (4, 1)}, "a split reduction is scalar"),
        ({"tile": (0, 16)}, "reduction loop 1 is tiled .16.; a split reduction runs whole"),
        ({"pack": (0,)}, "a split reduction stages no operands"),
    ],
)
def test_split_rules_name_what_breaks(change: dict, message: str) -> None:
    _, info = kernel(rows(4, 64))
    s = replace(Schedule((0, 0), (0, 1), (1, 1), split=8), **change)
    with pytest.raises(ValueError, match=message):
        check_split(s, info)


def test_an_elementwise_kernel_has_nothing_to_split() -> None:
    _, info = kernel(ADD)
    with pytest.raises(ValueError, match="no reduction loop to split"):
        check_split(Schedule((0, 0), (0, 1), (1, 1), split=2), info)


def test_the_split_loop_is_the_innermost_reduction_of_the_order() -> None:
    _, info = kernel(pool(8, 7))
    assert split_loop(Schedule((0, 0, 0), (0, 1, 2), (1, 1, 1)), info) == 2
    assert split_loop(Schedule((0, 0, 0), (0, 2, 1), (1, 1, 1)), info) == 1


def test_mapping_and_workgroup_bytes_count_the_lanes() -> None:
    _, info = kernel(rows(64, 1024))
    s = Schedule((16, 0), (0, 1), (2, 4), split=32)
    m = check_gpu_schedule(s, info, gpu_target("cuda"))
    assert (m.grid, m.block) == (4, 8 * 32)
    assert staged_bytes(s, info) == 8 * 32 * 2 * 4  # one partial per thread and accumulator
    with pytest.raises(ValueError, match="2048 threads per block"):
        check_gpu_schedule(replace(s, tile=(64, 0), unroll=(1, 4)), info, gpu_target("cuda"))


@pytest.mark.parametrize(
    ("text", "lanes"),
    [
        (matmul(1, 512, 1000), 64),  # a batch-1 classifier: 1000 outputs, K = 512
        (rows(4, 1000), 250),  # softmax rows: 4 outputs of 1000
        (pool(512, 7), 7),  # ResNet's global pooling: 512 outputs of 7x7
    ],
)
def test_simt_default_splits_small_outputs_with_long_reductions(text: str, lanes: int) -> None:
    _, info = kernel(text)
    target = gpu_target("cuda")
    s = gpu_default_schedule(info, target)
    m = check_gpu_schedule(s, info, target)
    assert s.split == lanes and m.block <= target.threads_per_block
    assert s.vector == -1 and s.pack == ()
    assert all(s.unroll[d] == 1 for d in info.parallel_loops), "one output per lane group"


@pytest.mark.parametrize(
    "text", [matmul(256, 512, 256), matmul(64, 128, 64), rows(1 << 16, 64), pool(512, 2)]
)
def test_simt_default_keeps_enough_outputs_unsplit(text: str) -> None:
    """Enough outputs to fill the device, inputs every output shares (blocking and staging
    reuse them), or too short a reduction to share."""
    _, info = kernel(text)
    assert gpu_default_schedule(info, gpu_target("cuda")).split == 1


def test_opencl_cpu_default_never_splits() -> None:
    _, info = kernel(rows(4, 1000))
    assert gpu_default_schedule(info, gpu_target("opencl-cpu")).split == 1


def test_the_attribute_prints_and_parses_split() -> None:
    s = Schedule((0, 0), (0, 1), (1, 4), split=8)
    attr = ScheduleAttr.from_schedule(s)
    assert str(attr).endswith("width = 1, split = 8>")
    text = rows(4, 64).replace(
        "outs(%y : memref<4xf32>) {",
        f"outs(%y : memref<4xf32>) attrs = {{sched.schedule = {attr}}} {{",
    )
    (op,) = generics(parse(text))
    assert op.attributes[SCHEDULE_ATTR_NAME] == attr
    assert "split" not in str(ScheduleAttr.from_schedule(replace(s, split=1)))


def test_the_pass_sets_split_and_resets_what_a_split_excludes() -> None:
    module = parse(rows(4, 1024))
    (op,) = generics(module)
    op.attributes[SCHEDULE_ATTR_NAME] = ScheduleAttr.from_schedule(
        Schedule((0, 64), (0, 1), (4, 2), vector=0, width=4, pack=(0,))
    )
    SplitReductionPass(threads=16).apply(context(), module)
    s = op.attributes[SCHEDULE_ATTR_NAME].schedule()  # type: ignore[attr-defined]
    assert (s.split, s.vector, s.width, s.pack, s.tile, s.unroll) == (16, -1, 1, (), (0, 0), (1, 2))


@pytest.mark.parametrize(
    ("threads", "message"),
    [
        (0, "split-reduction: option 'threads': 0 is out of range"),
        (3, "split-reduction: split = 3 does not divide loop 1"),
    ],
)
def test_the_pass_reports_bad_thread_counts(threads: int, message: str) -> None:
    with pytest.raises(DiagnosticException, match=message):
        SplitReductionPass(threads=threads).apply(context(), parse(rows(4, 1024)))


def test_the_cpu_lowering_refuses_a_split() -> None:
    module = parse(rows(4, 1024))
    SplitReductionPass(threads=4).apply(context(), module)
    with pytest.raises(DiagnosticException, match="split = 4 is a GPU knob"):
        ConvertLinalgToLoopsPass().apply(context(), module)
