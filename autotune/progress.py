"""What a tuning run shows while it runs, on a terminal or in a log.

The tuning loop (autotune/tuner.py `tune_task`) reports each measurement as a `TuneProgress`;
`TuneDisplay` shows them. A run (`tune_model.tune_tasks`) gives the scheduler's turns to one
display: `begin` when a task gets its batch of trials, one call per measurement, `end` when the
turn is over, `close` at the end of the run.

- On a terminal (the stream's `isatty()`): one live tqdm bar for the run, redrawn in place:
  the task being tuned, trials done / the budget, its current and best GFLOP/s, elapsed and
  time left (tqdm's estimate from the average measured rate, `smoothing=0`). Each finished turn
  leaves a line above the bar.
- Elsewhere (a log file, CI, a pipe): plain lines, never a carriage return: one at the end of
  each task's turn, and within a turn, after a batch of measurements that took the run past
  another 10% of its trials or came `interval_s` seconds after the last line.

The loop measures a batch of candidates at a time (the Measurer protocol: a batch in, its
results out, the local one building them all in parallel, then running each), so the results
of a batch arrive, and are reported, together when the batch is done (`TuneProgress.batch_left`
says how many of the same batch follow). A turn of `tune_tasks` is one batch: the bar moves
once a turn, and shows `measuring` while the next is measured.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

PERIODIC_STEPS = 10  # a plain line each time the run passes another 1/10 of its trials
INTERVAL_S = 30.0  # ... or this long after the last plain line
FIXED_COLUMNS = 100  # the bar's width on a terminal that does not say its own


@dataclass
class TuneProgress:
    """One measurement of a task's turn, as the tuning loop reports it."""

    task_index: int
    task_count: int
    trials_done: int  # of this call of tune_task
    trials_total: int
    current_gflops: float  # the measured candidate's (0: it failed)
    best_gflops: float  # the task's best so far, records from earlier runs included
    elapsed_s: float  # since this call of tune_task started
    # measurements of the same batch reported after this one: the measurer returns a batch's
    # results together, so they are reported together (0: the last, or the only one)
    batch_left: int = 0

    @property
    def eta_s(self) -> float:
        if self.trials_done == 0:
            return float("nan")
        return self.elapsed_s / self.trials_done * (self.trials_total - self.trials_done)


def format_seconds(s: float) -> str:
    """`42s`, `3m05s`, `1h02m`; `?` for an unknown time."""
    if not math.isfinite(s):
        return "?"
    s = max(0, round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def terminal_columns(stream: IO[str]) -> int:
    """The terminal's width, 0 if it does not say (a pseudo-terminal without a size, a test's
    stream): tqdm then draws nothing, so the bar gets a fixed size."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError
        return 0


def is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class TuneDisplay:
    """The progress of one tuning run of `total_trials` trials over `task_count` tasks, written
    to `stream` (default: sys.stderr). `tty` overrides the stream's `isatty()`; `clock` and
    `interval_s` time the plain lines; `mininterval` is the bar's least time between redraws."""

    def __init__(
        self,
        total_trials: int,
        task_count: int,
        stream: IO[str] | None = None,
        *,
        tty: bool | None = None,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        mininterval: float = 0.1,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = max(0, total_trials)
        self.task_count = task_count
        self.tty = is_terminal(self.stream) if tty is None else tty
        self.interval_s = interval_s
        self.clock = clock
        self.start = clock()
        self.done = 0  # trials of the run reported so far
        self.turn_start = 0  # self.done when the current turn began
        self.task_index = 0
        self.task_name = ""
        self.task_trials: dict[int, int] = {}  # trials of each task in the run
        self.last: TuneProgress | None = None  # the current turn's last report
        self.last_line_at = self.start
        self.next_step = 1  # the next tenth of the run that gets a plain line
        self.bar: Any = None
        if self.tty:
            from tqdm import tqdm

            sized = terminal_columns(self.stream) > 0
            self.bar = tqdm(
                total=self.total,
                file=self.stream,
                unit="trial",
                smoothing=0,  # time left from the average rate over the run
                mininterval=mininterval,
                dynamic_ncols=sized,  # follows a resized terminal
                ncols=None if sized else FIXED_COLUMNS,
                nrows=None if sized else 20,  # tqdm draws nothing on 0 rows either
                bar_format="{desc} {percentage:3.0f}%|{bar}| {n}/{total} trials "
                "[{elapsed}<{remaining}]{postfix}",
            )

    # ------------------------------------------------------------------ the loop's interface

    def begin(self, task_index: int, name: str) -> None:
        """Task `task_index` (named `name`) gets its turn."""
        self.task_index, self.task_name = task_index, name
        self.turn_start = self.done
        self.last = None
        if self.bar is not None:
            self.bar.set_description_str(self._task(), refresh=False)
            self.bar.set_postfix_str("measuring", refresh=True)

    def __call__(self, p: TuneProgress) -> None:
        """One measurement of the current turn (`tune_task`'s `progress`)."""
        self.task_index = p.task_index
        self.task_count = p.task_count
        new = self.turn_start + p.trials_done - self.done
        self.done += new
        self.task_trials[p.task_index] = self.task_trials.get(p.task_index, 0) + new
        self.last = p
        if self.bar is not None:
            self.bar.set_postfix_str(
                f"current {p.current_gflops:.1f}, best {p.best_gflops:.1f} GFLOP/s",
                refresh=False,
            )
            self.bar.update(new)
            return
        if p.batch_left > 0 or p.trials_done >= p.trials_total:
            return  # a plain line after a whole batch; after the turn's last, `end` writes it
        now = self.clock()
        step = self._step()
        if step >= self.next_step or now - self.last_line_at >= self.interval_s:
            self.next_step = step + 1
            self._line(
                f"{self._run()}; {self._task()}: current {p.current_gflops:.1f}, "
                f"best {p.best_gflops:.1f} GFLOP/s"
            )

    def end(self) -> None:
        """The current turn is over: a line for it (on a terminal, above the bar)."""
        p = self.last
        if p is None:
            return
        turn = self.done - self.turn_start
        in_all = self.task_trials.get(self.task_index, turn)
        line = f"{self._task()}: +{turn} trials ({in_all} in all), best {p.best_gflops:.1f} GFLOP/s"
        if self.bar is not None:
            self.bar.write(f"tune: {line}", file=self.stream)
            return
        self.next_step = max(self.next_step, self._step() + 1)
        self._line(f"{self._run()}; {line}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> TuneDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the plain lines

    def _task(self) -> str:
        name = f" {self.task_name[:40]}" if self.task_name else ""
        return f"task {self.task_index + 1}/{self.task_count}{name}"

    def _step(self) -> int:
        return self.done * PERIODIC_STEPS // self.total if self.total else 0

    def _run(self) -> str:
        elapsed = self.clock() - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        pct = 100 * self.done // self.total if self.total else 100
        return (
            f"{self.done}/{self.total} trials ({pct}%), elapsed {format_seconds(elapsed)}, "
            f"left ~{format_seconds(left)}"
        )

    def _line(self, text: str) -> None:
        self.last_line_at = self.clock()
        self.stream.write(f"tune: {text}\n")
        self.stream.flush()
