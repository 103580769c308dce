"""passes/schedule/options.py: one error format for every out-of-range pass option."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import DiagnosticException

from passes.schedule.options import (
    check_op_option,
    check_option,
    check_per_loop_option,
    check_threads_option,
    check_width_option,
    option_error,
)


def test_option_error_names_pass_option_value_and_range() -> None:
    e = option_error("tile", "sizes", -1, "0..8")
    assert str(e) == "tile: option 'sizes': -1 is out of range; allowed: 0..8"


def test_check_option_accepts_the_bounds_and_explains_the_range() -> None:
    check_option("p", "n", 0, 0, 4)
    check_option("p", "n", 4, 0, 4)
    with pytest.raises(
        DiagnosticException, match=r"^p: option 'n': 5 is out of range; allowed: 0\.\.4 \(why\)$"
    ):
        check_option("p", "n", 5, 0, 4, " (why)")


def test_per_loop_options_name_the_loop() -> None:
    check_per_loop_option("unroll-jam", "factors", (1, 2**31 - 1), 1)
    with pytest.raises(
        DiagnosticException,
        match=r"'factors': 2147483648 \(loop 1\) is out of range; allowed: 1\.\.2147483647",
    ):  # past the largest int32: a typo, and more than any loop needs
        check_per_loop_option("unroll-jam", "factors", (1, 2**31), 1)
    with pytest.raises(
        DiagnosticException,
        match=r"'factors': 0 \(loop 1\) is out of range; allowed: 1\.\.2147483647",
    ):
        check_per_loop_option("unroll-jam", "factors", (4, 0), 1)


def test_op_width_and_threads() -> None:
    check_op_option("tile", -1)
    with pytest.raises(DiagnosticException, match="'op': -2 is out of range"):
        check_op_option("tile", -2)
    check_width_option("vectorize", None)  # omitted: the host's widest
    check_width_option("vectorize", 64)
    with pytest.raises(DiagnosticException, match=r"'width': 0 is out of range; allowed: 1\.\.64"):
        check_width_option("vectorize", 0)  # no lanes is no vector
    for width in (3, 12, 48):  # what vector registers hold: a power of two
        with pytest.raises(
            DiagnosticException,
            match=rf"^vectorize: option 'width': {width} is out of range; allowed: a power of two: "
            r"1, 2, 4, 8, 16, 32, 64$",
        ):
            check_width_option("vectorize", width)
    with pytest.raises(
        DiagnosticException,
        match=r"'width': 65 .* allowed: 1\.\.64 \(omit it for the host CPU's widest\)",
    ):
        check_width_option("vectorize", 65)
    check_threads_option("default-schedule", 1024)
    with pytest.raises(
        DiagnosticException, match=r"'threads': 0 is out of range; allowed: 1\.\.1024"
    ):
        check_threads_option("default-schedule", 0)
