"""Range checks of the schedule passes' options, all reported in one format.

A pass checks its options before it looks at any kernel, so a bad value is an error on every
input (one without kernels too), and the error names the pass, the option and the allowed
range: `tile: option 'sizes': -1 (loop 1) is out of range; allowed: 0..2147483647`.

Sizes, factors and counts are bounded above too, by MAX_OPTION (the largest int32): a larger
one is a typo, never a request. An option that indexes the kernel (a loop, an operand, an op) is
bounded above by the kernel when it is edited, which names the actual range.
"""

from __future__ import annotations

from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import MAX_EXTENT, MAX_WIDTH
from passes.schedule.target import MAX_THREADS

MAX_OPTION = MAX_EXTENT - 1
"""The largest value of a size, factor or count option: 2**31 - 1, the largest int32 (a
tile or unroll factor past a loop's extent is cut to it, so no loop needs more)."""


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
    """A per-loop list option: every entry in lo..MAX_OPTION. How many entries the kernel needs
    is checked when the kernel is edited (knobs.py)."""
    for d, v in enumerate(values):
        check_option(pass_name, option, v, lo, MAX_OPTION, note, where=f" (loop {d})")


def check_op_option(pass_name: str, index: int) -> None:
    """`op=N`: -1 (every linalg.generic of a function) or an index among them."""
    if index < -1:
        raise option_error(
            pass_name,
            "op",
            index,
            "-1 (every linalg.generic of a function) or the index of one (0, 1, ...)",
        )


def check_width_option(pass_name: str, width: int | None) -> None:
    """`width=W`: a vector width in f32 lanes, a power of two (what vector registers hold);
    omitted (None) for the host CPU's widest. 0 lanes is no vector: refused."""
    if width is None:
        return
    check_option(pass_name, "width", width, 1, MAX_WIDTH, " (omit it for the host CPU's widest)")
    check_power_of_two(pass_name, "width", width, 1, MAX_WIDTH)


def check_power_of_two(
    pass_name: str, option: str, value: int, lo: int, hi: int, zero: str = ""
) -> None:
    """Raise unless `value` is a power of two in lo..hi (lo itself one), or 0 when `zero` says
    what 0 means."""
    if value == 0 and zero:
        return
    if not lo <= value <= hi or value & (value - 1):
        powers = ", ".join(str(1 << k) for k in range(lo.bit_length() - 1, hi.bit_length()))
        raise option_error(
            pass_name, option, value, (f"{zero} or " if zero else "") + f"a power of two: {powers}"
        )


def check_count_option(pass_name: str, option: str, value: int, lo: int, note: str = "") -> None:
    """A size, count or index option: lo..MAX_OPTION."""
    check_option(pass_name, option, value, lo, MAX_OPTION, note)


def check_threads_option(pass_name: str, threads: int) -> None:
    """`threads=T`: 1..MAX_THREADS, the thread pool's limit."""
    check_option(pass_name, "threads", threads, 1, MAX_THREADS)
