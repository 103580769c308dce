"""Shared plumbing of the schedule passes: find the targeted kernels and rewrite their schedule."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelInfo, analyze_kernel
from passes.transforms.default_schedule import default_schedule


def target_kernels(module: ModuleOp, kernel: str, index: int = -1) -> Iterator[linalg.GenericOp]:
    """linalg.generic ops inside `func.func @kernel` (every function when kernel is empty); with
    `index` >= 0 only the index-th generic of each function (a fused kernel holds several)."""
    for f in module.walk():
        if isinstance(f, func.FuncOp) and (not kernel or f.sym_name.data == kernel):
            generics = [op for op in f.walk() if isinstance(op, linalg.GenericOp)]
            if index >= len(generics) and generics:
                raise DiagnosticException(
                    f"op={index} is out of range: @{f.sym_name.data} has {len(generics)} linalg.generic ops"
                )
            yield from (generics if index < 0 else generics[index : index + 1])


def edit_schedules(
    module: ModuleOp,
    kernel: str,
    pass_name: str,
    edit: Callable[[Schedule, KernelInfo], Schedule],
    index: int = -1,
) -> None:
    """Apply `edit` to the schedule of every targeted kernel (the default one when it has none)."""
    found = False
    for op in target_kernels(module, kernel, index):
        found = True
        info = analyze_kernel(op)
        attr = op.attributes.get(SCHEDULE_ATTR_NAME)
        current = attr.schedule() if isinstance(attr, ScheduleAttr) else default_schedule(info)
        try:
            new = edit(current, info)
            new.check(info.num_loops)
        except ValueError as e:
            raise DiagnosticException(f"{pass_name}: {e}") from e
        op.attributes[SCHEDULE_ATTR_NAME] = ScheduleAttr.from_schedule(new)
    if kernel and not found:
        raise DiagnosticException(f"{pass_name}: no kernel named '{kernel}'")


def divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def spread(values: list[int], limit: int) -> list[int]:
    """At most `limit` of the sorted `values`, evenly spread (the ends kept)."""
    if len(values) <= limit:
        return values
    idx = sorted({round(i * (len(values) - 1) / (limit - 1)) for i in range(limit)})
    return [values[i] for i in idx]


def per_loop(values: tuple[int, ...], info: KernelInfo, what: str) -> tuple[int, ...]:
    if len(values) != info.num_loops:
        raise ValueError(f"expected {info.num_loops} {what} (one per loop), got {len(values)}")
    return values
