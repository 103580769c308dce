"""The CPU builder: kernel IR + a candidate's schedule passes -> an object file, in worker processes.

The kernel is lowered with the candidate's passes and compiled (compiler/backends/llvm_cpu) to an
object file exporting `kernel`, in a forked pool of `workers` processes; a compile error or a
build over its time limit is a result, never an exception.

xDSL and the compiler are imported inside `build`, not here: the runner process imports this
package (to reach autotune/measure/runner.py) and must start without them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from autotune.measure.interfaces import BuildInput, BuildResult
from autotune.measure.kernel import parse_kernel
from compiler.fork_pool import fork_map

if TYPE_CHECKING:
    from autotune.task import Task


def build(task: Task, config_passes: list[str], kernel_ir: str | None = None) -> bytes:
    """Object code of the task's kernel (exported as `kernel`) scheduled by `config_passes`.

    `kernel_ir` replaces task.kernel_ir (tests build deliberately broken variants with it)."""
    # imported here: keeps the runner process free of xDSL (see the module docstring)
    from xdsl.dialects.builtin import StringAttr

    from compiler.backends.llvm_cpu.compile import compile_object
    from compiler.pass_runner import run_passes
    from compiler.pipelines import lowering

    ctx, module, kernel = parse_kernel(kernel_ir if kernel_ir is not None else task.kernel_ir)
    kernel.sym_name = StringAttr("kernel")
    kernel.sym_visibility = None  # exported from the object file
    passes = [*config_passes, "convert-linalg-to-loops", *lowering("loops", "llvm-dialect")]
    run_passes(ctx, module, passes)
    return compile_object(module)


def timed_build(make: Callable[[BuildInput], bytes], job: BuildInput) -> BuildResult:
    """`make(job)` as a result: its artifact, or the error it raised (a compile error is a
    result, never an exception), with the time it took."""
    t0 = time.perf_counter()
    try:
        artifact = make(job)
    except Exception as e:
        return BuildResult(None, f"{type(e).__name__}: {e}", time.perf_counter() - t0)
    return BuildResult(artifact, "", time.perf_counter() - t0)


def build_in_pool(
    make: Callable[[BuildInput], bytes],
    inputs: Sequence[BuildInput],
    workers: int,
    timeout_s: float,
) -> list[BuildResult]:
    """timed_build of every input in a forked pool of `workers` processes (in this process
    with one worker, one input, or no `fork`), each within `timeout_s` (on average over a
    pool's share of the inputs): what every builder (CPU, GPU) does with its `make`."""

    def late(_: BuildInput) -> BuildResult:
        return BuildResult(None, f"build did not finish in {timeout_s:g} s", timeout_s)

    return fork_map(functools.partial(timed_build, make), inputs, workers, timeout_s, late)


def _make(job: BuildInput) -> bytes:
    return build(job.task, job.passes, job.kernel_ir)


class LocalBuilder:
    """Builds on this machine (build_in_pool)."""

    def __init__(self, workers: int = 2, timeout_s: float = 10.0) -> None:
        self.workers = workers
        self.timeout_s = timeout_s

    def build(self, inputs: Sequence[BuildInput]) -> list[BuildResult]:
        return build_in_pool(_make, inputs, self.workers, self.timeout_s)
