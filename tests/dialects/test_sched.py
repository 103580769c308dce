"""The #sched.schedule attribute: round trip through text, and the verifier's messages."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from compiler.model import make_context
from dialects.sched import Schedule, ScheduleAttr


def parse(text: str) -> ScheduleAttr:
    attr = Parser(make_context(), text).parse_attribute()
    assert isinstance(attr, ScheduleAttr)
    return attr


def test_round_trip() -> None:
    s = Schedule(tile=(0, 64, 256), order=(1, 0, 2), unroll=(8, 32, 1), vector=1, width=16)
    attr = ScheduleAttr.from_schedule(s)
    text = str(attr)
    assert (
        text
        == "#sched.schedule<tile = [0, 64, 256], order = [1, 0, 2], unroll = [8, 32, 1], vector = 1, width = 16>"
    )
    assert parse(text).schedule() == s


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (Schedule((0, 0), (0, 0), (1, 1)), "not a permutation"),
        (Schedule((0, 0, 0), (0, 1), (1, 1, 1)), "one entry per loop \\(got 3, 2, 3\\)"),
        (Schedule((0, 0), (0, 1), (1, 1), vector=2, width=4), "vector loop 2 out of range"),
        (Schedule((0, 0), (0, 1), (1, 6), vector=1, width=4), "multiple of the width"),
        (Schedule((-1, 0), (0, 1), (1, 1)), "tile sizes must be >= 0"),
    ],
)
def test_verifier_rejects(schedule: Schedule, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        ScheduleAttr.from_schedule(schedule).verify()
