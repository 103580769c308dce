"""Where a compilation's time goes: the report of `ziggurat compile --timing`.

While a `CompileTimer` collects (`with collecting() as timer:`), every pipeline that
compiler/pass_runner.py runs records its passes' wall seconds (through the pass
instrumentation of compiler/instrumentation.py, as `ziggurat-opt --timing` does), and the
machine-code phase records its steps: compiler/parallel_compile.py adds the seconds its worker
processes spent per step (summed over the workers: they overlap in time) and the wall seconds
of the whole phase. Nothing is collected when no timer is active, and a worker's timer is its
own: the parent merges what the worker sends back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from compiler.instrumentation import time_report
from compiler.levels import LEVELS

_PASS_LEVEL = {p: level for level, passes in LEVELS.items() for p in passes}


def pipeline_label(pass_names: Sequence[str]) -> str:
    """The level a pipeline produces: the one most of its passes belong to (schedule passes
    run before the loops level's own), else `passes`."""
    votes: dict[str, int] = {}
    for name in pass_names:
        if name in _PASS_LEVEL:
            votes[_PASS_LEVEL[name]] = votes.get(_PASS_LEVEL[name], 0) + 1
    return max(votes, key=lambda k: votes[k]) if votes else "passes"


@dataclass
class Section:
    """One timed step: wall seconds and the steps inside it, in the order they first ran."""

    name: str
    seconds: float = 0.0
    runs: int = 0
    children: dict[str, Section] = field(default_factory=dict)

    def child(self, name: str) -> Section:
        if name not in self.children:
            self.children[name] = Section(name)
        return self.children[name]

    def add(self, seconds: float) -> None:
        self.seconds += seconds
        self.runs += 1


@dataclass
class CompileTimer:
    """Wall time per level (and per pass inside it) and per machine-code step; summed worker
    seconds per step; counts (kernels, workers)."""

    root: Section = field(default_factory=lambda: Section("Total"))
    worker: Section = field(default_factory=lambda: Section("workers"))
    counts: dict[str, int] = field(default_factory=dict)
    prefix: tuple[str, ...] = ()
    """Where `add` and `record_pipeline` put their sections (see `within`)."""
    clock: Callable[[], float] = time.perf_counter
    """Wall seconds; a worker process's timer counts CPU seconds (`time.process_time`), which
    add up across processes that share the cores."""
    on_step: Callable[[str, float], None] | None = None
    """Called with (name, seconds) as each top-level step ends (a level, the machine code):
    progress for a long compile (the CLI prints it on a terminal)."""

    def add(self, path: Sequence[str], seconds: float) -> None:
        """Add `seconds` of wall time to the section at `prefix + path`."""
        _at(self.root, (*self.prefix, *path)).add(seconds)

    def add_first(self, name: str, seconds: float) -> None:
        """A top-level section timed elsewhere, reported before the others (the import)."""
        rest = self.root.children
        self.root.children = {name: Section(name, seconds, 1)}
        self.root.children.update((k, v) for k, v in rest.items() if k != name)

    @contextmanager
    def within(self, *path: str) -> Iterator[None]:
        """Record what runs inside the block below section `path`, without timing the block."""
        saved = self.prefix
        self.prefix = (*saved, *path)
        try:
            yield
        finally:
            self.prefix = saved

    @contextmanager
    def timed(self, *path: str) -> Iterator[None]:
        """Time the block as section `path`, and record what runs inside it below that."""
        t0 = self.clock()
        with self.within(*path):
            try:
                yield
            finally:
                elapsed = self.clock() - t0
        self.add(path, elapsed)
        self._step_done(path[-1] if path else "", elapsed)

    def _step_done(self, name: str, seconds: float) -> None:
        if self.on_step is not None and not self.prefix:
            self.on_step(name, seconds)

    def add_worker(self, steps: Iterable[tuple[Sequence[str], float]]) -> None:
        """Add seconds that one worker process spent, per step."""
        for path, seconds in steps:
            _at(self.worker, path).add(seconds)

    def record_pipeline(
        self, passes: Sequence[tuple[str, float]], verify_s: float, label: str | None = None
    ) -> None:
        """One pass pipeline run: (pass name, seconds) in order, plus the final verification."""
        level = label or pipeline_label([name for name, _ in passes])
        section = _at(self.root, (*self.prefix, level))
        section.add(sum(s for _, s in passes) + verify_s)
        for name, seconds in passes:
            section.child(name).add(seconds)
        if verify_s:
            section.child("verify").add(verify_s)
        self._step_done(level, sum(s for _, s in passes) + verify_s)

    def steps(self) -> list[tuple[tuple[str, ...], float]]:
        """Every section as (path, seconds), depth first: what a worker sends back."""
        out: list[tuple[tuple[str, ...], float]] = []

        def visit(s: Section, path: tuple[str, ...]) -> None:
            for c in s.children.values():
                out.append(((*path, c.name), c.seconds))
                visit(c, (*path, c.name))

        visit(self.root, ())
        return out

    def report(self) -> str:
        """The text report: wall seconds per level and pass (percent of the total), then the
        worker processes' summed seconds per step, then the counts."""
        total = sum(c.seconds for c in self.root.children.values())
        text = time_report("ziggurat compile time report", _rows(self.root), total)
        if self.worker.children:
            text += time_report(
                "kernel worker processes (CPU seconds, summed over the workers)",
                _rows(self.worker),
                sum(c.seconds for c in self.worker.children.values()),
                column="CPU Time",
            )
        if self.counts:
            text += "".join(f"  {k}: {v}\n" for k, v in self.counts.items()) + "\n"
        return text


def _rows(section: Section, depth: int = 0) -> list[tuple[float, str]]:
    """(seconds, name indented by depth) of every section below `section`, depth first."""
    rows: list[tuple[float, str]] = []
    for c in section.children.values():
        rows.append((c.seconds, "  " * depth + c.name))
        rows += _rows(c, depth + 1)
    return rows


def record(step: str, seconds: float) -> None:
    """Add `seconds` to section `step` of the active timer, if any (below its prefix)."""
    timer = active()
    if timer is not None:
        timer.add((step,), seconds)


@contextmanager
def timed(*path: str) -> Iterator[None]:
    """The active timer's `timed` section, or nothing when no timer is active."""
    timer = active()
    if timer is None:
        yield
    else:
        with timer.timed(*path):
            yield


def _at(section: Section, path: Sequence[str]) -> Section:
    for name in path:
        section = section.child(name)
    return section


_active: list[CompileTimer] = []


def active() -> CompileTimer | None:
    """The timer collecting now (the innermost), or None."""
    return _active[-1] if _active else None


@contextmanager
def collecting(timer: CompileTimer | None = None) -> Iterator[CompileTimer]:
    """Collect the timings of what runs inside the block into `timer` (a new one by default)."""
    timer = timer or CompileTimer()
    _active.append(timer)
    try:
        yield timer
    finally:
        _active.remove(timer)
