"""passes/schedule/gpu_target.py, gpu_rules.py and gpu_default.py: what a schedule means on a GPU,
its legality against a target, and the default GPU schedules."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dialects.sched import Schedule
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_rules import check_gpu_schedule, gpu_mapping, staged_bytes
from passes.schedule.gpu_target import PRESETS, gpu_target
from passes.schedule.target import host_vector_width
from tests.support.schedule_kernels import ADD, kernel, matmul

STAGED = Schedule((32, 32, 8), (0, 1, 2), (4, 4, 1), pack=(0, 1))


def test_mapping_counts_blocks_threads_and_staging() -> None:
    _, info = kernel(matmul(64, 128, 64))
    m = gpu_mapping(STAGED, info)
    assert m.block_tile == (32, 32, 8)
    assert m.blocks == (2, 2, 1) and m.grid == 4
    assert m.threads == (8, 8, 1) and m.block == 64
    # A's box: 32 rows x 8 deep; B's: 8 deep x 32 columns
    assert staged_bytes(STAGED, info) == 2 * 32 * 8 * 4


def test_the_staged_schedule_is_legal_for_cuda() -> None:
    _, info = kernel(matmul(64, 128, 64))
    assert check_gpu_schedule(STAGED, info, gpu_target("cuda")).block == 64


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tile": (48, 32, 8)}, "block tile 48 does not divide 64"),
        ({"unroll": (3, 4, 1)}, "register tile 3 does not divide block tile 32"),
        ({"tile": (64, 64, 8), "unroll": (1, 2, 1)}, "2048 threads per block; cuda allows 1024"),
        ({"unroll": (16, 8, 1)}, "128 elements per thread; cuda keeps at most 64"),
        ({"vector": 1, "width": 8, "unroll": (4, 8, 1)}, "vector width 8 is not one of [1, 2, 4]"),
        (
            {"tile": (64, 64, 0), "unroll": (8, 8, 1)},
            "take 65536 bytes of workgroup memory; cuda has 49152",
        ),
        ({"pack": (2,)}, "operand 2 cannot be staged"),
    ],
)
def test_illegal_schedules_name_the_rule(change: dict, message: str) -> None:
    _, info = kernel(matmul(64, 128, 64))
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_gpu_schedule(replace(STAGED, **change), info, gpu_target("cuda"))


def test_unknown_target_names_the_presets() -> None:
    with pytest.raises(ValueError, match="unknown GPU target 'tpu' .known: opencl-cpu, "):
        gpu_target("tpu")


@pytest.mark.parametrize("shape", [(64, 128, 64), (256, 512, 256), (49, 96, 10), (2, 512, 1000)])
def test_cuda_default_matmul_is_blocked_and_staged(shape: tuple[int, int, int]) -> None:
    """No naive kernel: several threads per block, a register tile where the extents allow one,
    the shared operands staged in workgroup memory, every count dividing exactly."""
    m, k, n = shape
    _, info = kernel(matmul(m, k, n))
    target = gpu_target("cuda")
    s = gpu_default_schedule(info, target)
    mapping = check_gpu_schedule(s, info, target)
    assert mapping.block >= min(64, m * n // math.prod(s.unroll[:2]))
    assert s.pack, "threads of a block share A or B"
    assert 0 < s.tile[2] <= 32, "the reduction is staged in steps"
    if m % 4 == 0 and n % 4 == 0:
        assert s.unroll[:2] == (4, 4)


def test_opencl_cpu_default_is_cpu_shaped() -> None:
    """On PoCL: wide vectors and big register tiles per work-item, no staging."""
    _, info = kernel(matmul(64, 128, 64))
    target = gpu_target("opencl-cpu")
    s = gpu_default_schedule(info, target)
    check_gpu_schedule(s, info, target)
    assert s.vector == 1 and s.width == min(16, host_vector_width())
    assert s.pack == () and s.tile[2] == 0
    assert math.prod(s.unroll[:2]) >= 2 * s.width


def test_elementwise_default_uses_many_threads() -> None:
    _, info = kernel(ADD)
    s = gpu_default_schedule(info, gpu_target("cuda"))
    assert gpu_mapping(s, info).block == 256 and s.pack == ()


def test_presets_are_consistent() -> None:
    for name in PRESETS:
        t = gpu_target(name)
        assert t.name == name and t.api in ("opencl", "cuda")
        assert 1 in t.vector_widths and t.threads_per_block <= t.max_threads
