"""OpenCLProgram runs test_host_plan's MODULE for real (PoCL here) with hand-written kernels
that follow the KERNEL PARAMETER CONVENTION, against numpy; and refuses what it cannot run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler.backends.gpu.host_plan import BufferRef, HostPlan, build_plan
from compiler.backends.gpu.opencl_runtime import (
    DEVICE_ENV,
    OpenCLProgram,
    opencl_available,
    select_device,
)
from compiler.errors import CompileError, InputError
from tests.compiler.backends.gpu.test_host_plan import (
    assert_main_matches_numpy_twice,
    assert_resident_launches,
    expected,
    parse,
)

REASON = opencl_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"OpenCL: {REASON}")

SOURCE = """
#define ARG(k, T) __global T* arg##k = (__global T*)((__global char*)arg##k##_buf + arg##k##_byte_offset)

__kernel void add_weight(__global float* arg0_buf, const ulong arg0_byte_offset,
                         __global float* arg1_buf, const ulong arg1_byte_offset,
                         __global float* arg2_buf, const ulong arg2_byte_offset) {
  ARG(0, float); ARG(1, float); ARG(2, float);
  int i = get_local_id(0);
  arg2[32 + i] = arg0[i] + arg1[i];  /* the type's static offset: 32 */
}

__kernel void scale(__global float* arg0_buf, const ulong arg0_byte_offset,
                    __global float* arg1_buf, const ulong arg1_byte_offset) {
  ARG(0, float); ARG(1, float);
  int i = get_group_id(0), j = get_local_id(0);
  arg1[i * 8 + j] = 2.0f * arg0[i * 8 + j];
}
"""


@pytest.fixture(scope="module")
def plan() -> HostPlan:
    return build_plan(parse(), 1)


@pytest.fixture(scope="module")
def program(plan: HostPlan) -> OpenCLProgram:
    return OpenCLProgram(plan, SOURCE)


def test_runs_against_numpy_twice_on_the_same_buffers(program: OpenCLProgram):
    assert program.plan.launches[1].args[0].byte_offset == 128  # a shifted view is read
    assert_main_matches_numpy_twice(program)
    assert program.device_name and program.queue is not None


def test_profile_times_each_launch(program: OpenCLProgram):
    times = program.profile({"arg0": np.ones(16, np.float32)})
    assert [name for name, _ in times] == ["add_weight", "scale"]
    assert all(s >= 0 for _, s in times)


def test_resident_launches_time_without_copies(program: OpenCLProgram):
    assert_resident_launches(program)


def test_wrong_arrays_are_input_errors(program: OpenCLProgram):
    with pytest.raises(InputError, match="input 'arg0'"):
        program.function("main")(np.zeros(8, np.float32), np.zeros((2, 8), np.float32))
    with pytest.raises(KeyError):
        program.function("other")


def test_moved_arena_views(plan: HostPlan):
    """Both arena references 64 bytes further on: the byte shifts reach the kernels."""
    write, read = plan.launches
    moved = dataclasses.replace(
        plan,
        arena_bytes=plan.arena_bytes + 64,
        launches=(
            dataclasses.replace(write, args=(*write.args[:2], _shifted(write.args[2], 64))),
            dataclasses.replace(read, args=(_shifted(read.args[0], 64), read.args[1])),
        ),
    )
    assert [r.byte_offset for r in (moved.launches[0].args[2], moved.launches[1].args[0])] == [
        64,
        192,
    ]
    x = np.arange(16, dtype=np.float32)
    out = np.zeros((2, 8), np.float32)
    OpenCLProgram(moved, SOURCE).function("main")(x, out)
    np.testing.assert_allclose(out, expected(x))


def _shifted(ref: BufferRef, by: int) -> BufferRef:
    return dataclasses.replace(ref, byte_offset=ref.byte_offset + by)


def test_block_too_large_is_a_clear_error(plan: HostPlan):
    limit = select_device().max_work_group_size
    big = dataclasses.replace(plan.launches[0], block=(limit * 2, 1, 1))
    with pytest.raises(CompileError, match=r"kernel add_weight \(launch 0\).*work-group size"):
        OpenCLProgram(dataclasses.replace(plan, launches=(big, plan.launches[1])), SOURCE)


def test_build_error_carries_the_log(plan: HostPlan):
    bad = SOURCE.replace("2.0f * arg0", "undefined_thing * arg0")
    with pytest.raises(CompileError, match="OpenCL build failed") as info:
        OpenCLProgram(plan, bad)
    assert "undefined_thing" in str(info.value)


def test_missing_kernel_is_named(plan: HostPlan):
    with pytest.raises(CompileError, match="kernel scale"):
        OpenCLProgram(plan, SOURCE.replace("void scale(", "void scale2("))


def test_device_from_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(DEVICE_ENV, "0:0")
    assert select_device() is not None
    monkeypatch.setenv(DEVICE_ENV, "99:0")
    with pytest.raises(CompileError, match=DEVICE_ENV):
        select_device()
