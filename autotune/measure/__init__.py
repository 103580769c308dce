"""Build and run tuning candidates: a builder, a runner and a checker behind small interfaces.

A measurement is a function of (task, candidate passes, target) only. On the CPU (`measure`):
- builder.py: the kernel IR is lowered with the candidate's schedule passes and compiled to an
  object file, in a forked worker pool (`LocalBuilder`);
- runner.py: the object is loaded into a runner process (numpy + llvmlite through the compiler's
  JIT, compiler/backends/llvm_cpu/jit.py; no xDSL), called on fixed random 64-byte-aligned
  inputs and timed (`LocalRunner`); the process is reused across candidates and restarted after
  a crash, a timeout or a wrong result (a stray write may have corrupted it);
- checker.py: the output of the first call is checked against the task's default-schedule
  reference (`ReferenceChecker`).
Failures are results (`error_kind`, one of ERROR_KINDS), never exceptions; when the reference
itself cannot be built or run, no candidate of the task is run or counted as correct.

interfaces.py holds the protocols (Builder, Runner, Checker; Measurer, what the tuning loop
measures with, LocalMeasurer here and DaskMeasurer on a cluster), the records they pass, and how a
GPU runner plugs in; compose.py composes them (`measure_with`), local.py is the measurement on
this machine (`measure`); peak.py bounds what a device can do (remote timings beyond it are
refused).

On a GPU (`measure(target="opencl" | "cuda", preset=...)`, gpu_measure.py): gpu_builder.py lowers
to kernel C and launches, gpu_runner.py runs them in a child process that owns the device and
times them with device events (warm caches: L2_POLICY), and the outputs are checked against the
task's CPU reference (CpuReferenceChecker).

Importing this package imports no xDSL nor pyopencl/pycuda (the runner processes import it): the
functions that need them import them when called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from autotune.measure.builder import LocalBuilder, build
from autotune.measure.checker import (
    DEFAULT_CHECKER,
    REFERENCE_PASSES,
    ReferenceChecker,
    clear_references,
    mismatch,
)
from autotune.measure.compose import measure_with
from autotune.measure.gpu_builder import GpuBuilder
from autotune.measure.gpu_measure import CpuReferenceChecker, measure_gpu
from autotune.measure.gpu_runner import (
    L2_POLICY,
    MIN_SAMPLE_S,
    GpuRunner,
    default_gpu_runner,
    device_info,
)
from autotune.measure.interfaces import (
    ERROR_KINDS,
    INPUT_SEED,
    Builder,
    BuildInput,
    BuildResult,
    Check,
    Checker,
    Measurer,
    MeasureResult,
    Reference,
    RunInputs,
    Runner,
    RunResult,
    RunSettings,
    Signature,
    random_inputs,
)
from autotune.measure.kernel import kernel_signature, private_args
from autotune.measure.local import measure
from autotune.measure.peak import IMPLAUSIBLE, cpu_peak_flops, gpu_peak_flops, implausible
from autotune.measure.runner import MIN_REPEAT_S, LocalRunner, default_runner
from compiler.backends.llvm_cpu.jit import host_target

if TYPE_CHECKING:
    from autotune.task import Task


@dataclass(frozen=True)
class LocalMeasurer:
    """A Measurer (interfaces.py) on this machine: `fn(task, candidates, **kwargs)`, `fn` being
    this package's `measure` by default, looked up at each call (tests replace it). Defined here,
    not in local.py: that lookup is of this package's name."""

    fn: Callable[..., list[MeasureResult]] | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    remote: ClassVar[bool] = False
    target: ClassVar[None] = None  # this host's: the database writes it
    device: ClassVar[None] = None

    @property
    def measure_kwargs(self) -> Mapping[str, Any]:
        return self.kwargs

    def __call__(self, task: Task, candidates: list[list[str]]) -> list[MeasureResult]:
        fn = self.fn if self.fn is not None else measure  # this package's, as it is now
        return fn(task, candidates, **self.kwargs)


__all__ = [
    "DEFAULT_CHECKER",
    "ERROR_KINDS",
    "IMPLAUSIBLE",
    "INPUT_SEED",
    "L2_POLICY",
    "MIN_REPEAT_S",
    "MIN_SAMPLE_S",
    "REFERENCE_PASSES",
    "BuildInput",
    "BuildResult",
    "Builder",
    "Check",
    "Checker",
    "CpuReferenceChecker",
    "GpuBuilder",
    "GpuRunner",
    "LocalBuilder",
    "LocalMeasurer",
    "LocalRunner",
    "MeasureResult",
    "Measurer",
    "Reference",
    "ReferenceChecker",
    "RunInputs",
    "RunResult",
    "RunSettings",
    "Runner",
    "Signature",
    "build",
    "clear_references",
    "cpu_peak_flops",
    "default_gpu_runner",
    "default_runner",
    "device_info",
    "gpu_peak_flops",
    "host_target",
    "implausible",
    "kernel_signature",
    "measure",
    "measure_gpu",
    "measure_with",
    "mismatch",
    "private_args",
    "random_inputs",
]
