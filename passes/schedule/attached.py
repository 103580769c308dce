"""The schedule attached to a kernel: read it, find the kernels a pass targets, rewrite theirs.

A kernel without a `#sched.schedule` is scheduled by default_schedule, both when it is lowered
and when a schedule pass edits it; `schedule_of` is that rule, written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelAnalysisError, KernelInfo, analyze_kernel
from passes.analysis.pass_errors import op_error
from passes.schedule.default import default_schedule
from passes.schedule.options import check_op_option, option_error
from passes.schedule.rules import legalize

ScheduleEdit = Callable[[Schedule, KernelInfo], Schedule]
"""A schedule pass's change: the kernel's current schedule and analysis -> the new schedule
(raises ValueError when the change does not fit the kernel)."""


def schedule_of(op: linalg.GenericOp, info: KernelInfo | None = None) -> Schedule:
    """The schedule attached to `op`, or the analytic default when it has none. `info` is the
    kernel's analysis when the caller has it (computed here only for the default)."""
    attr = op.attributes.get(SCHEDULE_ATTR_NAME)
    if isinstance(attr, ScheduleAttr):
        return attr.schedule()
    return default_schedule(info if info is not None else analyze_kernel(op))


def kernel_info(op: linalg.GenericOp, pass_name: str) -> KernelInfo:
    """The analysis of a kernel that `pass_name` schedules. Schedules are for buffer-level
    kernels (linalg.generic on memrefs, after bufferize): a kernel on tensors, or one the loop
    generator cannot take (KernelAnalysisError), is an error of the pass, located at the op."""
    try:
        return analyze_kernel(op)
    except KernelAnalysisError as e:
        tensors = [(i, v.type) for i, v in enumerate(op.operands) if isinstance(v.type, TensorType)]
        if tensors:
            i, t = tensors[0]
            raise op_error(
                op,
                f"{pass_name}: expects buffer-level IR (linalg.generic on memrefs: run bufferize "
                f"first), but this linalg.generic is on tensors (operand #{i}: {t})",
            ) from None
        raise op_error(op, f"{pass_name}: cannot schedule this linalg.generic: {e}") from None


def set_schedule(op: linalg.GenericOp, s: Schedule) -> None:
    """Attach `s` to `op` (replacing any schedule it has)."""
    op.attributes[SCHEDULE_ATTR_NAME] = ScheduleAttr.from_schedule(s)


def target_kernels(
    module: ModuleOp, kernel: str, index: int = -1, pass_name: str = "schedule"
) -> Iterator[linalg.GenericOp]:
    """linalg.generic ops inside `func.func @kernel` (every function when kernel is empty); with
    `index` >= 0 only the index-th generic of each function (a fused kernel holds several).
    `index` is range-checked on the first `next`, before any kernel is looked at: the passes
    rely on this for their `op` option."""
    check_op_option(pass_name, index)
    for f in module.walk():
        if isinstance(f, func.FuncOp) and (not kernel or f.sym_name.data == kernel):
            generics = [op for op in f.walk() if isinstance(op, linalg.GenericOp)]
            if index >= len(generics) and generics:
                plural = "s" if len(generics) > 1 else ""
                raise option_error(
                    pass_name,
                    "op",
                    index,
                    f"-1..{len(generics) - 1} (@{f.sym_name.data} has {len(generics)} "
                    f"linalg.generic op{plural})",
                )
            yield from (generics if index < 0 else generics[index : index + 1])


def _kernel_of(op: linalg.GenericOp) -> str:
    """`@name, linalg.generic #i (n loops)`: which op a schedule edit failed on, in the terms of
    the passes' `kernel` and `op` options."""
    f = op.parent_op()
    while f is not None and not isinstance(f, func.FuncOp):
        f = f.parent_op()
    if f is None:
        return "linalg.generic"
    generics = [g for g in f.walk() if isinstance(g, linalg.GenericOp)]
    return f"@{f.sym_name.data}, linalg.generic #{generics.index(op)}"


def _narrowing_hint(kernel: str, index: int) -> str:
    """What to add when the edit targeted every kernel: kernels differ in their loop counts."""
    if kernel and index >= 0:
        return ""
    return " (kernel=NAME and op=N limit the pass to one op)"


def edit_schedules(
    module: ModuleOp, kernel: str, pass_name: str, edit: ScheduleEdit, index: int = -1
) -> None:
    """Apply `edit` to the schedule of every targeted kernel (the default one when it has none)
    and store the result, legalized (rules.legalize); a ValueError becomes a diagnostic that
    names the pass."""
    found = False
    for op in target_kernels(module, kernel, index, pass_name):
        found = True
        info = kernel_info(op, pass_name)
        current = schedule_of(op, info)
        try:
            new = legalize(edit(current, info), info)
        except ValueError as e:
            raise DiagnosticException(
                f"{pass_name}: {e}, in {_kernel_of(op)}{_narrowing_hint(kernel, index)}"
            ) from e
        set_schedule(op, new)
    if kernel and not found:
        raise DiagnosticException(f"{pass_name}: no kernel named '{kernel}'")
