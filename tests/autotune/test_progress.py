"""The tuner's progress (autotune/progress.py): plain lines without a carriage return when the
output is not a terminal, a live tqdm bar when it is; and the tune summary's untuned rows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from autotune.measure import LocalMeasurer, MeasureResult
from autotune.progress import TuneDisplay, TuneProgress, format_seconds
from autotune.task import Task, anchor_info, extract_tasks
from autotune.tune_model import ModelTuneSummary, tune_tasks
from autotune.tuner import TaskTuneResult, tune_task
from compiler import zoo

TURNS = [(0, 16), (1, 16), (2, 8)]  # (task, trials granted): 40 trials over 3 tasks


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def run_turns(display: TuneDisplay, clock: Clock, turns=TURNS, batch: int = 16) -> None:
    """The calls tune_tasks makes for `turns` measured in batches of `batch`: the results of a
    batch come together; measurement k of a turn at `current` k, best 2k."""
    for task, n in turns:
        display.begin(task, f"conv {task}")
        for k in range(1, n + 1):
            if k % batch == 1 or batch == 1:
                clock.t += 10.0  # a batch measured
            left = min(batch - (k - 1) % batch, n - k + 1) - 1
            display(TuneProgress(task, len(turns), k, n, float(k), 2.0 * k, clock.t - 100, left))
        display.end()
    display.close()


def trials_done(line: str, total: int) -> int:
    m = re.search(rf"(\d+)/{total} trials", line)
    assert m, line
    return int(m[1])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_not_a_terminal_gets_a_plain_line_per_turn() -> None:
    out, clock = io.StringIO(), Clock()
    run_turns(TuneDisplay(40, 3, out, clock=clock), clock)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text, text
    lines = text.splitlines()
    # each turn (one batch, its results reported together) ends with its line: the run's
    # trials and time left, the turn's trials, in all, the task's best
    assert [line.split("; ")[1] for line in lines] == [
        "task 1/3 conv 0: +16 trials (16 in all), best 32.0 GFLOP/s",
        "task 2/3 conv 1: +16 trials (16 in all), best 32.0 GFLOP/s",
        "task 3/3 conv 2: +8 trials (8 in all), best 16.0 GFLOP/s",
    ], lines
    assert lines[0].startswith("tune: 16/40 trials (40%), elapsed 10s, left ~15s;"), lines
    assert lines[-1].startswith("tune: 40/40 trials (100%), elapsed 30s, left ~0s;"), lines


def test_plain_lines_every_tenth_of_a_long_turn() -> None:
    """One task's 40 trials in batches of 8: a line after each batch (each passes 10%), none
    inside one."""
    out, clock = io.StringIO(), Clock()
    run_turns(TuneDisplay(40, 1, out, clock=clock, interval_s=1e9), clock, [(0, 40)], batch=8)
    lines = out.getvalue().splitlines()
    assert [trials_done(line, 40) for line in lines] == [8, 16, 24, 32, 40], lines
    assert "task 1/1 conv 0: current 8.0, best 16.0 GFLOP/s" in lines[0], lines
    assert "task 1/1 conv 0: +40 trials (40 in all), best 80.0 GFLOP/s" in lines[-1], lines


def test_plain_lines_also_come_after_an_interval() -> None:
    """A long task: a line every `interval_s` between the 10% lines (the clock is a fake)."""
    out, clock = io.StringIO(), Clock()
    display = TuneDisplay(1000, 1, out, clock=clock, interval_s=30.0)
    display.begin(0, "slow")
    for k in range(1, 11):  # 1% of the run, a batch of one every 10 "seconds"
        clock.t += 10.0
        display(TuneProgress(0, 1, k, 1000, 1.0, 1.0, 10.0 * k))
    lines = out.getvalue().splitlines()
    assert [trials_done(line, 1000) for line in lines] == [3, 6, 9], lines
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_a_live_bar() -> None:
    out, clock = Terminal(), Clock()
    run_turns(TuneDisplay(40, 3, out, clock=clock, mininterval=0), clock)
    text = out.getvalue()
    assert "\r" in text  # redrawn in place
    frames = [f for f in re.split(r"[\r\n]", text) if "trials [" in f]
    for n in range(1, 41):  # a redraw for every measurement
        assert any(f" {n}/40 trials" in f for f in frames), n
    last = frames[-1]
    assert "task 3/3 conv 2" in last and "100%" in last, last
    assert "current 8.0, best 16.0 GFLOP/s" in last, last
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d\]", last), last  # elapsed < time left
    # each finished turn leaves its line above the bar
    assert "tune: task 1/3 conv 0: +16 trials (16 in all), best 32.0 GFLOP/s\n" in text
    assert "tune: task 3/3 conv 2: +8 trials (8 in all), best 16.0 GFLOP/s\n" in text


def test_the_stream_decides_unless_told() -> None:
    assert TuneDisplay(1, 1, Terminal()).tty
    assert not TuneDisplay(1, 1, io.StringIO()).tty
    assert not TuneDisplay(1, 1, Terminal(), tty=False).tty
    assert [format_seconds(s) for s in (0, 42.4, 185, 3720, float("nan"))] == [
        "0s",
        "42s",
        "3m05s",
        "1h02m",
        "?",
    ]


# ---------------------------------------------------------------------- the loop's use of it


def fake_measure(task: Task, candidates: list[list[str]]) -> list[MeasureResult]:
    """A correct 1 ms for each candidate, the default schedule's beside it 2 ms."""
    return [MeasureResult([1e-3], baseline_costs=[2e-3]) for _ in candidates]


def failing_measure(task: Task, candidates: list[list[str]]) -> list[MeasureResult]:
    return [MeasureResult(error_kind="runtime_error", error="boom") for _ in candidates]


@pytest.fixture(scope="module")
def mlp_tasks() -> list[Task]:
    tasks = extract_tasks(zoo.mlp())
    assert len(tasks) >= 3
    return tasks


def test_tune_task_shows_its_progress_on_stderr(
    tmp_path: Path, mlp_tasks: list[Task], capsys: pytest.CaptureFixture[str]
) -> None:
    from autotune.database import Database

    task = mlp_tasks[0]
    result = tune_task(
        task,
        anchor_info(task),
        Database(tmp_path / "db.jsonl"),
        5,
        tuner="random",
        batch=5,
        measurer=LocalMeasurer(fake_measure),
    )  # progress: True, the default
    assert len(result.curve) == 5
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines and lines[-1].startswith("tune: 5/5 trials (100%)"), lines
    assert f"task 1/1 {task.name[:20]}" in lines[-1] and "GFLOP/s" in lines[-1]


def test_tune_tasks_in_a_log_and_its_summary(
    tmp_path: Path, mlp_tasks: list[Task], capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget that reaches two of the tasks: plain lines, and `not tuned` rows, no nan."""
    summary = tune_tasks(
        mlp_tasks,
        str(tmp_path / "db.jsonl"),
        4,
        tuner="random",
        batch=2,
        measurer=LocalMeasurer(fake_measure),
    )
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert len(lines) == 2 and all("+2 trials (2 in all), best" in e for e in lines), err
    assert lines[-1].startswith("tune: 4/4 trials (100%)") and "GFLOP/s" in lines[-1], err

    table = summary.table()
    assert "nan" not in table.lower(), table
    untuned = len(mlp_tasks) - 2
    rows = table.splitlines()[1 : 1 + len(mlp_tasks)]
    assert sum("not tuned" in r for r in rows) == untuned, table
    assert f"{untuned} of {len(mlp_tasks)} tasks not tuned" in table, table
    for r in rows:
        if "not tuned" not in r:
            assert re.search(r"\s2\s+[\d.]+\s+[\d.]+\s+0\.50x$", r), r


def test_a_task_without_a_correct_measurement_is_no_nan_row(
    tmp_path: Path, mlp_tasks: list[Task]
) -> None:
    task = mlp_tasks[0]
    summary = tune_tasks(
        [task],
        str(tmp_path / "db.jsonl"),
        2,
        tuner="random",
        batch=2,
        progress=False,
        measurer=LocalMeasurer(failing_measure),
    )
    table = summary.table()
    assert "nan" not in table.lower(), table
    row = table.splitlines()[1]
    assert row.startswith(task.name[:43]) and "none correct" in row, table
    assert "1 of 1 tasks without a correct measurement" in table, table

    # and a result without one, given directly
    summary = ModelTuneSummary([task])
    summary.results[task.workload_key] = TaskTuneResult(task, 0.0, None, [0.0])
    summary.trials[task.workload_key] = 1
    assert "nan" not in summary.table().lower()
