"""The `convert-linalg-to-loops` pass: find the kernels, plan fusion, check schedules, lower.

Each linalg.generic (and linalg.fill) on memrefs is replaced by the loop nest its
`#sched.schedule` describes (loop_nest.py builds it); a reduction kernel's initializer and
elementwise consumers run inside its nest when loop_codegen/fusion.py finds them fusable.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import Schedule
from passes.analysis.kernel_access import (
    KernelAnalysisError,
    KernelInfo,
    analyze_kernel,
    has_dynamic_shape,
)
from passes.conversions.linalg_to_loops.dynamic_blocks import split_dynamic_kernel
from passes.conversions.linalg_to_loops.loop_nest import LoopNestGenerator
from passes.conversions.loop_codegen.fills import fill_to_generic, fills_to_generics
from passes.conversions.loop_codegen.fusion import Fusion, fused_schedule, plan_fusion
from passes.schedule.attached import schedule_of
from passes.schedule.rules import check_pack, check_parallel, check_vector_loop

__all__ = ["ConvertLinalgToLoopsPass", "fill_to_generic", "lower_kernel"]
"""`fill_to_generic` lives in loop_codegen/fills.py (shared with the GPU lowering); it is
re-exported for code that imported it from here."""


def _checked_schedule(op: linalg.GenericOp, info: KernelInfo) -> Schedule:
    """The kernel's schedule (or the default one), rejected with a diagnostic when it does not
    fit the kernel."""
    sched = schedule_of(op, info)
    try:
        sched.check(info.num_loops)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    if sched.split != 1:
        raise DiagnosticException(
            f"convert-linalg-to-loops: split = {sched.split} is a GPU knob (threads sharing a "
            "reduction); on the CPU each output's reduction runs on one thread (split = 1)"
        )
    try:
        check_vector_loop(sched, info)
        check_parallel(sched, info)
        check_pack(sched, info)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    return sched


def lower_kernel(op: linalg.GenericOp, fusion: Fusion | None = None) -> None:
    """Replace one linalg.generic on memrefs (and the generics fused with it) by its loop nest."""
    try:
        info = analyze_kernel(op)
    except KernelAnalysisError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: {e}\n  in: {op}") from e
    if 0 in info.extents:  # a zero-size kernel runs no iterations: nothing to emit
        for fused in [op, *([] if fusion is None else fusion.generics())]:
            fused.detach()
            fused.erase()
        return
    sched = _checked_schedule(op, info)
    if fusion is not None:
        sched = fused_schedule(sched, info)
    LoopNestGenerator(info, sched, fusion).generate()
    if fusion is not None:
        for fused in fusion.generics():
            fused.detach()
            fused.erase()


@dataclass(frozen=True)
class ConvertLinalgToLoopsPass(ModulePass):
    """Lower every linalg.generic / linalg.fill on memrefs to scheduled scf/vector loops."""

    name = "convert-linalg-to-loops"

    fuse: bool = True
    """Run a reduction's initializing generic and its elementwise consumers inside its loop
    nest (register-level producer/consumer fusion within one kernel function)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fills_to_generics(op, self.name)
        generics = [o for o in op.walk() if isinstance(o, linalg.GenericOp)]
        if any(kernel.results for kernel in generics):
            raise DiagnosticException(
                "convert-linalg-to-loops expects linalg.generic on memrefs (run bufferize first)"
            )
        dynamic = [kernel for kernel in generics if has_dynamic_shape(kernel)]
        if dynamic:  # run-time extents: static blocks of the kernel (dynamic_blocks.py)
            for kernel in dynamic:
                split_dynamic_kernel(kernel)
            generics = [o for o in op.walk() if isinstance(o, linalg.GenericOp)]
        plans = plan_fusion(generics) if self.fuse else {}
        fused = {g for f in plans.values() for g in f.generics()}
        for kernel in generics:
            if kernel not in fused:
                lower_kernel(kernel, plans.get(kernel))
