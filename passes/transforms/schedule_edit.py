"""Shared plumbing of the schedule passes: find the targeted kernels and rewrite their schedule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import MAX_EXTENT, SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelInfo, analyze_kernel
from passes.transforms.default_schedule import default_schedule

MAX_UNROLLED_BODIES = 4096
"""The most copies of a kernel's body one register tile may hold (accumulators times the unroll
of the reduction loops): the register tile is generated unrolled, so a bigger one is IR the size
of a huge program (the tuner's tiles stay under 200)."""


def option_error(pass_name: str, option: str, value: object, allowed: str) -> DiagnosticException:
    """The error for a pass option outside its range, naming the pass, the option and the range."""
    return DiagnosticException(
        f"{pass_name}: option '{option}': {value} is out of range; allowed: {allowed}"
    )


def check_option(
    pass_name: str, option: str, value: int, lo: int, hi: int, note: str = "", where: str = ""
) -> None:
    """Raise option_error unless lo <= value <= hi (`note` explains the range, `where` the entry)."""
    if not lo <= value <= hi:
        raise option_error(pass_name, option, f"{value}{where}", f"{lo}..{hi}{note}")


def check_per_loop_option(
    pass_name: str, option: str, values: tuple[int, ...], lo: int, note: str = ""
) -> None:
    """A per-loop list option: every entry in lo..MAX_EXTENT (checked before looking at kernels)."""
    for d, v in enumerate(values):
        check_option(pass_name, option, v, lo, MAX_EXTENT, note, where=f" (loop {d})")


def check_op_option(pass_name: str, index: int) -> None:
    """`op=N`: -1 (every linalg.generic of a function) or an index among them."""
    if index < -1:
        raise option_error(
            pass_name, "op", index, "-1 (every linalg.generic of a function) or the index of one (0, 1, ...)"
        )


def target_kernels(
    module: ModuleOp, kernel: str, index: int = -1, pass_name: str = "schedule"
) -> Iterator[linalg.GenericOp]:
    """linalg.generic ops inside `func.func @kernel` (every function when kernel is empty); with
    `index` >= 0 only the index-th generic of each function (a fused kernel holds several)."""
    check_op_option(pass_name, index)
    for f in module.walk():
        if isinstance(f, func.FuncOp) and (not kernel or f.sym_name.data == kernel):
            generics = [op for op in f.walk() if isinstance(op, linalg.GenericOp)]
            if index >= len(generics) and generics:
                raise option_error(
                    pass_name, "op", index,
                    f"-1..{len(generics) - 1} (@{f.sym_name.data} has {len(generics)} linalg.generic "
                    f"op{'s' if len(generics) > 1 else ''})",
                )
            yield from (generics if index < 0 else generics[index : index + 1])


def clamp_to_extents(s: Schedule, info: KernelInfo) -> Schedule:
    """`s` with tiles and register tiles larger than their loop cut to the loop (what the lowering
    does with them anyway: a tile covering the loop leaves it untiled); the vector loop's register
    tile stays a multiple of the width."""
    tile = tuple(min(t, e) for t, e in zip(s.tile, info.extents, strict=True))
    unroll = []
    for d, (u, e) in enumerate(zip(s.unroll, info.extents, strict=True)):
        cap = -(-e // s.width) * s.width if d == s.vector and s.width > 0 else e
        unroll.append(min(u, max(cap, 1)))
    return replace(s, tile=tile, unroll=tuple(unroll))


def unrolled_bodies(s: Schedule, info: KernelInfo) -> int:
    """Copies of the kernel's body in one register tile (vector lanes count once per vector)."""
    n = 1
    for d, u in enumerate(s.unroll):
        n *= -(-u // s.width) if d == s.vector else u
    return n


def check_register_tile(s: Schedule, info: KernelInfo) -> None:
    """Raise ValueError when the register tile is too big to generate (MAX_UNROLLED_BODIES)."""
    bodies = unrolled_bodies(s, info)
    if bodies > MAX_UNROLLED_BODIES:
        raise ValueError(
            f"the register tile (unroll {list(s.unroll)}, vector loop {s.vector}, width {s.width}) "
            f"holds {bodies} copies of the body; at most {MAX_UNROLLED_BODIES} (it is generated unrolled)"
        )


def edit_schedules(
    module: ModuleOp,
    kernel: str,
    pass_name: str,
    edit: Callable[[Schedule, KernelInfo], Schedule],
    index: int = -1,
) -> None:
    """Apply `edit` to the schedule of every targeted kernel (the default one when it has none)."""
    found = False
    for op in target_kernels(module, kernel, index, pass_name):
        found = True
        info = analyze_kernel(op)
        attr = op.attributes.get(SCHEDULE_ATTR_NAME)
        current = attr.schedule() if isinstance(attr, ScheduleAttr) else default_schedule(info)
        try:
            new = edit(current, info)
            new.check(info.num_loops)
            new = clamp_to_extents(new, info)
            check_register_tile(new, info)
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
