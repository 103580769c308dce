"""The three parts of a measurement behind small interfaces, and what they hand each other.

After TVM MetaSchedule's split (builder / runner, with AutoTVM's correctness check):

    BuildInput --Builder.build--> BuildResult --Runner.run--> RunResult --> MeasureResult
                                                   |  check(outputs), from the Checker
    Checker: the task's Reference (its default schedule, built and run by the same builder and
    runner) and the comparison of a candidate's outputs with it.

`autotune.measure.measure_with` composes any three; `measure` is the local CPU composition
(LocalBuilder, LocalRunner, ReferenceChecker).

A GPU target (OpenCL, CUDA) plugs in as a Builder and a Runner of its own, with no change to the
CPU builder, the checker or `measure_with`:
- its Builder lowers the kernel IR with the candidate's passes (the reference's are the default
  schedule, checker.REFERENCE_PASSES) to device code in `BuildResult.artifact` (PTX, a cubin,
  SPIR-V, OpenCL C...);
- its Runner is a separate process that owns the device context (a kernel that faults can lose
  the context, and a hung one is only stopped by killing the process): per workload it makes
  the host inputs of `RunInputs.signature` with `random_inputs` (as the CPU runner does: the
  reference and every candidate see the same data) and copies them to device buffers; per
  artifact it loads the module, copies the inputs in, launches once (the checked call), copies
  the arguments back as numpy arrays, then times `settings.repeat` runs of `settings.number`
  launches between device events (seconds per call). A crash or lost context is a
  `runtime_error`, no answer within `settings.timeout_s` a `timeout` (kill the process); an
  output `check` rejects is a `wrong_result`, after which the process (or the context) is reset,
  since the kernel may have written outside its buffers.
The Checker only ever sees numpy outputs and `measure_with` only results, so both stay as they
are; `measure` has one branch choosing the GPU builder and runner (gpu_builder.py,
gpu_runner.py, composed with the CPU's reference in gpu_measure.py) for target 'opencl' or
'cuda'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from compiler.runtime import aligned_empty

if TYPE_CHECKING:
    from autotune.task import Task

ERROR_KINDS = (
    "compile_error",
    "runtime_error",
    "timeout",
    "wrong_result",
    "reference_error",
    "implausible_timing",
)
"""`reference_error`: the task's default-schedule reference could not be built or run, so no
candidate of the task can be checked (none is run, none counts as correct).
`implausible_timing`: a remote timing refused by the tuner (beyond the device's peak: peak.py)."""

Signature = list[tuple[tuple[int, ...], str]]
"""(shape, numpy dtype name) of each argument of a kernel, in order."""

Check = Callable[[list[np.ndarray]], str]
"""Judges a run's outputs (the kernel's arguments after one call): '' if correct, else why not."""

INPUT_SEED = 0


def random_inputs(signature: Signature) -> list[np.ndarray]:
    """The arguments every runner calls a kernel with (64-byte aligned host arrays): seeded
    normal floats, random booleans, zero integers (indices: zero is in range for any gather).
    The same for the reference and every candidate, whichever the runner."""
    rng = np.random.default_rng(INPUT_SEED)
    out = []
    for shape, dtype in signature:
        a = aligned_empty(shape, dtype)
        if np.issubdtype(a.dtype, np.floating):
            a[...] = rng.standard_normal(shape)
        elif a.dtype == np.bool_:
            a[...] = rng.integers(0, 2, shape).astype(bool)
        else:
            a[...] = 0
        out.append(a)
    return out


@dataclass(frozen=True)
class BuildInput:
    """One thing to build: the task's kernel (or `kernel_ir` instead) scheduled by `passes`."""

    task: Task
    passes: list[str]
    kernel_ir: str | None = None  # replaces task.kernel_ir (tests build broken variants)

    @property
    def ir(self) -> str:
        return self.kernel_ir if self.kernel_ir is not None else self.task.kernel_ir


@dataclass
class BuildResult:
    """What a runner loads (`artifact`; CPU: an object file exporting `kernel`), or why not."""

    artifact: bytes | None = None
    error: str = ""  # the compile error when there is no artifact
    build_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.artifact is not None


@dataclass(frozen=True)
class RunInputs:
    """The kernel's arguments: their shapes and dtypes, and the key (the workload's) under which
    a runner may keep the seeded random inputs it makes from them. `baseline`, if given, is an
    artifact (the task's default schedule) a runner that can times alternately with each build,
    so that every candidate has a cost measured in the same moments as its own (see
    RunResult.baseline_costs); a runner that cannot ignores it."""

    key: str
    signature: Signature
    baseline: bytes | None = None


@dataclass(frozen=True)
class RunSettings:
    repeat: int = 5  # timed runs
    number: int = 0  # calls per timed run (0: enough for MIN_REPEAT_S)
    timeout_s: float = 10.0  # bound on one artifact's run (load, check call, timing)
    threads: int = 1  # threads of the thread-pool runtime for code that runs parallel loops
    paired: bool = False  # time the task's reference alternately with each candidate


@dataclass
class RunResult:
    costs: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    # the arguments after the first call; only kept when no check was given (a reference run)
    outputs: list[np.ndarray] | None = None
    error_kind: str | None = None  # runtime_error, timeout, wrong_result; None on success
    error: str = ""
    run_s: float = 0.0  # wall time of the run in the runner (load, check call, timing)
    # the baseline's seconds per call, timed in turns with the candidate's: on a host
    # whose speed changes over time (a shared VM's stolen cycles, a clock), min(costs) /
    # min(baseline_costs) compares candidates measured minutes apart; empty: not paired
    baseline_costs: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error_kind is None


RunOne = Callable[[bytes], tuple[str, Any]]
"""A runner's way of running one artifact: ("ok", (costs, outputs, run_s)) or (an error kind,
why)."""


def run_each(
    runner: str,
    builds: Sequence[BuildResult],
    run_one: RunOne,
    check: Check | None,
    restart: Callable[[], None],
) -> list[RunResult]:
    """Runner.run around a runner's `run_one`, as every runner reports: an error is a result;
    with `check`, the outputs judged and dropped (a rejection is a `wrong_result`, after which
    `restart`: the kernel may have written where it should not); without, kept (a reference
    run)."""
    results = []
    for b in builds:
        if b.artifact is None:
            raise ValueError(f"{runner}.run: a build without an artifact ({b.error})")
        kind, payload = run_one(b.artifact)
        if kind != "ok":
            results.append(RunResult(error_kind=kind, error=payload))
            continue
        costs, outputs, run_s = payload
        if check is None:
            results.append(RunResult(costs, outputs, None, "", run_s))
            continue
        why = check(outputs)
        if why:
            restart()
            results.append(RunResult(costs, None, "wrong_result", why, run_s))
        else:
            results.append(RunResult(costs, None, None, "", run_s))
    return results


@dataclass(frozen=True)
class Reference:
    """A task's reference: the kernel's arguments and the default schedule's outputs, or why
    there are none (then no candidate of the task can be checked)."""

    signature: Signature
    outputs: list[np.ndarray] | None
    error: str = ""
    unspecified: frozenset[int] = frozenset()  # arguments not compared (see private_args)
    artifact: bytes | None = None  # the reference's build (timed beside paired candidates)


@dataclass
class MeasureResult:
    costs: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    error_kind: str | None = None  # one of ERROR_KINDS, None on success
    error: str = ""
    build_s: float = 0.0
    run_s: float = 0.0  # wall time of the run in the runner (load, check, timing)
    baseline_costs: list[float] = field(default_factory=list)  # see RunResult.baseline_costs

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def min_s(self) -> float:
        return min(self.costs) if self.costs else float("inf")

    @property
    def median_s(self) -> float:
        return float(np.median(self.costs)) if self.costs else float("inf")


class Builder(Protocol):
    def build(self, inputs: Sequence[BuildInput]) -> list[BuildResult]:
        """One result per input, in order. A compile error (or a build that takes too long) is a
        result without an artifact, never an exception."""
        ...


class Runner(Protocol):
    def run(
        self,
        inputs: RunInputs,
        builds: Sequence[BuildResult],
        settings: RunSettings,
        check: Check | None = None,
    ) -> list[RunResult]:
        """Run and time each build (all with an artifact), in order, one result each.

        Crashes and timeouts are results (`runtime_error`, `timeout`), never exceptions, and
        the next build still runs (in a fresh process if need be). With `check`, the outputs of
        each build's first call are judged by it and dropped: a rejected one is a `wrong_result`
        (with its costs), after which the runner starts afresh. Without, they are kept in the
        result (what a reference run needs)."""
        ...

    def stop(self) -> None:
        """Release the process and device the runner holds (a later run starts them again)."""
        ...


class Checker(Protocol):
    def reference(self, task: Task, target: str, threads: int = 1) -> Reference | None:
        """The reference of `task` on `target` for `threads` threads made earlier, or None."""
        ...

    def reference_input(self, task: Task, threads: int = 1) -> BuildInput:
        """What to build for the reference (built along with the first batch's candidates): the
        default schedule for `threads` threads."""
        ...

    def make_reference(
        self, task: Task, target: str, build: BuildResult, runner: Runner, settings: RunSettings
    ) -> Reference:
        """Run the reference build (on `settings.threads` threads, within `settings.timeout_s` or
        checker.REFERENCE_TIMEOUT_S) and keep its outputs for `task` on `target`. A failure (the kernel's arguments, the build, a crash, a timeout) is a
        Reference without outputs."""
        ...

    def check(
        self, outputs: list[np.ndarray], reference: Reference, rtol: float, atol: float
    ) -> str:
        """'' if `outputs` match the reference's, else which argument differs and how."""
        ...


class Measurer(Protocol):
    """What the tuning loop (autotune/tuner.py `tune_task`) measures candidates with: a batch of
    one task's candidates (each a list of pass specs) in, one MeasureResult each out, in order.

    `local.LocalMeasurer` measures on this machine; `distributed.DaskMeasurer` on a dask
    cluster's workers. A `remote` measurer's word is checked by the tuner: a timing beyond its
    device's peak is refused, and a new best is measured again here with `measure_kwargs`.
    `target` is the host target ({cpu, features}) its records name (None: this host's, which
    the database writes), `device` its workers' GPU (None: on the CPU, or this machine's)."""

    @property
    def remote(self) -> bool: ...

    @property
    def target(self) -> Mapping[str, str] | None: ...

    @property
    def device(self) -> Mapping[str, Any] | None: ...

    @property
    def measure_kwargs(self) -> Mapping[str, Any]: ...

    def __call__(self, task: Task, candidates: list[list[str]]) -> list[MeasureResult]: ...
