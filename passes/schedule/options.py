"""Range checks of the schedule passes' options, all reported in one format.

A pass checks its options before it looks at any kernel, so a bad value is an error on every
input (one without kernels too), and the error names the pass, the option and the allowed
range: `tile: option 'sizes': -1 (loop 1) is out of range; allowed: 0..2147483648`.
"""

from __future__ import annotations

from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import MAX_EXTENT, MAX_WIDTH
from passes.schedule.target import MAX_THREADS


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
    """A per-loop list option: every entry in lo..MAX_EXTENT. How many entries the kernel needs
    is checked when the kernel is edited (knobs.py)."""
    for d, v in enumerate(values):
        check_option(pass_name, option, v, lo, MAX_EXTENT, note, where=f" (loop {d})")


def check_op_option(pass_name: str, index: int) -> None:
    """`op=N`: -1 (every linalg.generic of a function) or an index among them."""
    if index < -1:
        raise option_error(
            pass_name,
            "op",
            index,
            "-1 (every linalg.generic of a function) or the index of one (0, 1, ...)",
        )


def check_width_option(pass_name: str, width: int) -> None:
    """`width=W`: a vector width in f32 lanes, 0 for the host CPU's widest."""
    check_option(pass_name, "width", width, 0, MAX_WIDTH, " (0: the host CPU's widest)")


def check_threads_option(pass_name: str, threads: int) -> None:
    """`threads=T`: 1..MAX_THREADS, the thread pool's limit."""
    check_option(pass_name, "threads", threads, 1, MAX_THREADS)
