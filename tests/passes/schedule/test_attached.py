"""passes/schedule/attached.py: the schedule a kernel has (or the default), and how passes edit it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.attached import (
    edit_schedules,
    schedule_of,
    set_schedule,
    target_kernels,
)
from passes.schedule.default import default_schedule
from tests.support.schedule_kernels import generics, kernel, matmul, parse

ATTACHED = "tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16"


def test_schedule_of_is_the_attached_schedule() -> None:
    op, _ = kernel(matmul(schedule=ATTACHED))
    assert schedule_of(op) == Schedule((0, 0, 0), (0, 1, 2), (8, 32, 1), 1, 16)


def test_schedule_of_a_kernel_without_one_is_the_default() -> None:
    op, info = kernel(matmul())
    assert schedule_of(op) == schedule_of(op, info) == default_schedule(info)


def test_set_schedule_replaces_the_attribute() -> None:
    op, _ = kernel(matmul(schedule=ATTACHED))
    s = Schedule((0, 0, 0), (0, 1, 2), (1, 1, 1))
    set_schedule(op, s)
    assert isinstance(op.attributes[SCHEDULE_ATTR_NAME], ScheduleAttr)
    assert schedule_of(op) == s


def test_edit_starts_from_the_current_schedule_and_stores_it_legalized() -> None:
    module = parse(matmul(schedule=ATTACHED))
    edit_schedules(module, "", "tile", lambda s, info: replace(s, tile=(0, 1000, 64)))
    (op,) = generics(module)
    assert schedule_of(op) == Schedule((0, 64, 64), (0, 1, 2), (8, 32, 1), 1, 16)


def test_an_edit_that_does_not_fit_is_a_diagnostic_naming_the_pass() -> None:
    module = parse(matmul(schedule=ATTACHED))
    with pytest.raises(DiagnosticException, match="^interchange: order"):
        edit_schedules(module, "", "interchange", lambda s, info: replace(s, order=(0, 0, 1)))


def test_kernel_and_op_select_the_targets() -> None:
    module = parse(matmul(schedule=ATTACHED))
    assert len(list(target_kernels(module, "matmul", 0))) == 1
    assert list(target_kernels(module, "other")) == []
    with pytest.raises(DiagnosticException, match="no kernel named 'other'"):
        edit_schedules(module, "other", "tile", lambda s, info: s)
    with pytest.raises(DiagnosticException, match=r"tile: option 'op': 1 is out of range"):
        edit_schedules(module, "", "tile", lambda s, info: s, index=1)


def test_a_kernel_without_a_schedule_is_edited_from_the_default() -> None:
    module = parse(matmul())
    edit_schedules(module, "", "pack", lambda s, info: replace(s, pack=(1,), tile=(16, 32, 32)))
    (op,) = generics(module)
    expected = replace(default_schedule(analyze_kernel(op)), pack=(1,), tile=(16, 32, 32))
    assert schedule_of(op) == expected
