"""CUDA: test_host_plan's MODULE with hand-written CUDA C kernels (KERNEL PARAMETER CONVENTION)
checked by nvcc for sm_90 where the toolkit is installed, and run by CudaProgram where a CUDA
device and pycuda are (skipped elsewhere, with cuda_available()'s reason)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler.backends.gpu.cuda_check import check_cuda_source, nvcc_path
from compiler.backends.gpu.cuda_runtime import CudaProgram, cuda_available
from compiler.backends.gpu.host_plan import HostPlan, build_plan
from compiler.errors import CompileError, InputError
from tests.compiler.backends.gpu.test_host_plan import (
    assert_main_matches_numpy_twice,
    assert_resident_launches,
    parse,
)

SOURCE = """
extern "C" __global__ void add_weight(float* arg0, float* arg1, float* arg2) {
  int i = threadIdx.x;
  arg2[32 + i] = arg0[i] + arg1[i];  /* the type's static offset: 32 */
}

extern "C" __global__ void scale(float* arg0, float* arg1) {
  int i = blockIdx.x, j = threadIdx.x;
  arg1[i * 8 + j] = 2.0f * arg0[i * 8 + j];
}
"""

CUDA = cuda_available()
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
needs_cuda = pytest.mark.skipif(CUDA is not None, reason=f"CUDA: {CUDA}")


@pytest.fixture(scope="module")
def plan() -> HostPlan:
    return build_plan(parse(), 1)


@needs_nvcc
def test_kernels_compile_for_sm_90():
    check_cuda_source(SOURCE)


@needs_nvcc
def test_nvcc_diagnostics_in_the_error():
    with pytest.raises(CompileError, match="nvcc") as info:
        check_cuda_source(SOURCE.replace("2.0f * arg0", "undefined_thing * arg0"))
    assert "undefined_thing" in str(info.value) and "is undefined" in str(info.value)


def test_availability_is_one_line():
    assert CUDA is None or (CUDA and "\n" not in CUDA)


@pytest.mark.skipif(CUDA is None, reason="CUDA is available here")
def test_program_without_cuda_is_a_compile_error(plan: HostPlan):
    with pytest.raises(CompileError, match="CUDA") as info:
        CudaProgram(plan, SOURCE)
    assert str(CUDA) in str(info.value)


@needs_cuda
def test_runs_against_numpy_twice_on_the_same_buffers(plan: HostPlan):
    program = CudaProgram(plan, SOURCE)
    try:
        assert_main_matches_numpy_twice(program)
        main = program.function("main")
        times = program.profile([np.ones(16, np.float32)])
        assert [name for name, _ in times] == ["add_weight", "scale"]
        assert all(s >= 0 for _, s in times)
        with pytest.raises(InputError, match="input 'arg0'"):
            main(np.zeros(8, np.float32), np.zeros((2, 8), np.float32))
        assert_resident_launches(program)
    finally:
        program.close()


@needs_cuda
def test_cuda_errors_name_the_kernel(plan: HostPlan):
    big = dataclasses.replace(plan.launches[0], block=(4096, 1, 1))
    with pytest.raises(CompileError, match=r"kernel add_weight \(launch 0\).*threads"):
        CudaProgram(dataclasses.replace(plan, launches=(big, plan.launches[1])), SOURCE)
    with pytest.raises(CompileError, match="kernel scale"):
        CudaProgram(plan, SOURCE.replace("void scale(", "void scale2("))
    with pytest.raises(CompileError, match="undefined_thing"):
        CudaProgram(plan, SOURCE.replace("2.0f * arg0", "undefined_thing * arg0"))
