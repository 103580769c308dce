"""autotune/measure/builder.py: a candidate's schedule passes on the task's kernel, compiled to
an object file for the runner (with the kernel's signature, from autotune/measure/kernel.py)."""

from __future__ import annotations

from autotune.measure import build, kernel_signature
from tests.support.measure_kernels import TASK, K, M, N


def test_build_gives_object_code_and_signature() -> None:
    obj = build(TASK, ["default-schedule"])
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF"
    assert kernel_signature(TASK.kernel_ir) == [
        ((M, K), "float32"),
        ((K, N), "float32"),
        ((M, N), "float32"),
    ]
