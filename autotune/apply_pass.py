"""`autotune{db=PATH trials=N tuner=xgb seed=S}`: give every kernel its best measured schedule.

Runs at the buffer level, after `outline-kernels`: each kernel function is a task (its workload
key is computed from its canonical IR, autotune/task.py). With `trials > 0` the tasks that the
database does not know yet are tuned first (autotune/tuner.py, measurements appended to the
database as they are made); then every kernel whose task has a successful record gets that
record's configuration, replayed as schedule passes on that function. Kernels without a record
keep no schedule and `default-schedule` gives them the analytic one; so do kernels whose best
record, timed beside the default schedule (a paired record: `baseline_costs`), was no faster
than it (the space's configurations do not include every schedule the heuristic makes).

The pass lives with the tuner (as AutoTVM's ApplyHistoryBest does): the compiler below knows
nothing of databases. It runs as one of the `schedules` passes that the model API applies at the
buffer level (`compile_model(..., schedules=[AutotunePass(db=...)])`) and says what it did in the
module attribute `ziggurat.autotune` (read back with `autotune_stats`).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from autotune.database import Database, DatabaseError, comparable_costs
from autotune.record import TuningRecord
from autotune.space import SearchSpace
from autotune.task import extract_tasks, generics_of, task_from_function
from autotune.tune_model import tune_tasks
from autotune.tuning_target import CpuTuningTarget, TuningTarget, tuning_target
from compiler.pass_runner import run_passes
from dialects.attributes import AUTOTUNE_STATS_ATTR
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.attached import set_schedule
from passes.schedule.default import parallel_schedule
from passes.schedule.options import check_option, check_threads_option, option_error


@dataclass
class AutotuneStats:
    """What an application did (the CLI says how many kernels fell back to the default)."""

    kernels: int = 0
    tuned: int = 0
    fallback: list[str] = field(default_factory=list)  # no record
    default_won: list[str] = field(default_factory=list)  # no record beat the default schedule

    def to_attr(self) -> DictionaryAttr:
        return DictionaryAttr(
            {
                "kernels": IntAttr(self.kernels),
                "tuned": IntAttr(self.tuned),
                "fallback": ArrayAttr([StringAttr(n) for n in self.fallback]),
                "default_won": ArrayAttr([StringAttr(n) for n in self.default_won]),
            }
        )


def autotune_stats(attributes: dict[str, Attribute]) -> AutotuneStats | None:
    """The stats an `autotune` pass left in a module's attributes (None if it did not run)."""
    attr = attributes.get(AUTOTUNE_STATS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return None
    kernels, tuned, fallback, won = (
        attr.data.get(k) for k in ("kernels", "tuned", "fallback", "default_won")
    )

    def names(a: Attribute | None) -> list[str]:
        return (
            [n.data for n in a.data if isinstance(n, StringAttr)]
            if isinstance(a, ArrayAttr)
            else []
        )

    return AutotuneStats(
        kernels.data if isinstance(kernels, IntAttr) else 0,
        tuned.data if isinstance(tuned, IntAttr) else 0,
        names(fallback),
        names(won),
    )


def beats_default(record: TuningRecord) -> bool:
    """Whether a record was faster than the default schedule timed beside it (a record without
    `baseline_costs` was not paired: it is taken at its word)."""
    base = record.baseline_costs
    return not base or record.cost < min(base)


PARALLEL_FALLBACK_SLACK = 1.15
"""Applying one-thread records on several threads: a record up to this much slower (one thread)
than the best is preferred when the best's loop order leaves no outer loop to parallelize."""
TUNERS = ("xgb", "random")
MAX_TRIALS = 1_000_000
"""Measurements per task: at 10 ms or more each, a million already take hours per kernel."""


def apply_database(
    module: ModuleOp,
    db_path: str,
    ctx: Context,
    threads: int = 1,
    target: TuningTarget | None = None,
) -> AutotuneStats:
    """Schedule every kernel of `module` from the best record of its task in the database.

    With `threads` > 1, a record tuned for that many threads wins; else a one-thread record is
    applied and its outer loops are parallelized by the default heuristic (parallel_schedule).
    With a GPU `target`, the best record of its space measured on its device.
    """
    target = target or CpuTuningTarget(threads)
    threads = target.threads
    db = Database(db_path)
    stats = AutotuneStats()
    kernels = [
        f
        for f in module.body.block.ops
        if isinstance(f, func.FuncOp) and f.sym_name.data != "main" and f.body.blocks
    ]
    for fn in kernels:
        generics = generics_of(fn)
        if not generics:
            continue
        stats.kernels += 1
        task = task_from_function(fn)
        anchor = generics[task.anchor]
        info = analyze_kernel(anchor)
        space = target.space(info)
        best = next(  # the fastest record that is a config of this space (not a hand-edited one)
            (
                r
                for r in db.ranked(
                    task.workload_key, space.space_hash(), threads, target.record_preset
                )
                if space.contains(r.config) and target.accepts(r)
            ),
            None,
        )
        parallelized = None
        if best is None and threads > 1:  # no record for this thread count (a CPU's): a
            space = SearchSpace(info)  # one-thread record the default heuristic can parallelize
            ranked = [
                r
                for r in db.ranked(task.workload_key, space.space_hash(), threads=1)
                if space.contains(r.config)
            ]
            costs = comparable_costs(ranked)
            for r, cost in zip(ranked, costs):
                if cost > PARALLEL_FALLBACK_SLACK * costs[0]:
                    best = ranked[0]  # none close to the best parallelizes: keep the best
                    break
                s = parallel_schedule(space.to_schedule(r.config), info, threads)
                if s.parallel:
                    best, parallelized = r, s
                    break
            else:
                best = ranked[0] if ranked else None
        if best is None or not space.contains(best.config):
            stats.fallback.append(task.name)
            continue
        if not beats_default(best):
            stats.default_won.append(task.name)
            continue
        run_passes(ctx, module, space.to_passes(best.config, task.anchor, kernel=fn.sym_name.data))
        if parallelized is not None:
            set_schedule(anchor, parallelized)
        stats.tuned += 1
    return stats


FIRST_LINE_LIMIT = 1 << 20
"""Bytes read to find a database's first record: a record is a few hundred bytes."""


def check_database_file(db: str) -> None:
    """Raise DatabaseError unless `db` can be a tuning database: JSON lines whose first
    non-blank line is a JSON object (a record). /etc/passwd, a model or a binary named by
    mistake is refused naming the file, before it is read as records or appended to. A missing
    or empty file passes (tuning creates it); one that is not a regular file, or cannot be read,
    is left to the Database, which refuses it without blocking on a FIFO."""
    try:
        fd = os.open(db, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        head = os.read(fd, FIRST_LINE_LIMIT)
    except OSError:
        return
    finally:
        os.close(fd)
    lines = enumerate(head.splitlines(keepends=True), 1)
    first = next(((n, raw) for n, raw in lines if raw.strip()), None)
    if first is None:
        return  # empty, or blank lines only
    number, raw = first
    line = raw.strip()
    complete = raw.endswith(b"\n")  # else torn by a killed writer, or longer than the limit
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        if not complete and line.startswith(b"{"):
            return
        why = "not JSON"
    else:
        if isinstance(record, dict):
            return
        why = "JSON, but not an object"
    raise DatabaseError(
        f"{db} is not a tuning database (JSON lines, one record object each): "
        f"line {number} is {why}"
    )


def tuned_schedules(
    db: str | None, threads: int = 1, target: str = "cpu", preset: str = ""
) -> list[ModulePass]:
    """The `schedules` argument of compiler.model.compile_model that applies a tuning database
    (none without one): `compile_model(path, schedules=tuned_schedules("tune.jsonl"))`; for a
    GPU, `target` (opencl, cuda) and the schedule `preset` the model is compiled with."""
    return [AutotunePass(db=db, threads=threads, target=target, preset=preset)] if db else []


@dataclass(frozen=True)
class AutotunePass(ModulePass):
    name = "autotune"

    db: str = ""
    trials: int = 0
    """New measurements per task missing from the database (0: only apply what is known)."""
    tuner: str = "xgb"
    seed: int = 0
    target: str = "cpu"
    """Where the kernels run: cpu, opencl or cuda (records of that target's space)."""
    preset: str = ""
    """The GPU schedule preset (passes/schedule/gpu_target.py; empty: the api's default)."""
    threads: int = 1
    """Threads the kernels will run on (records tuned for that many are preferred)."""

    def check_options(self) -> None:
        """Reject out-of-range options before touching the database or the kernels."""
        check_option(
            self.name, "trials", self.trials, 0, MAX_TRIALS, " (0: only apply the database)"
        )
        check_threads_option(self.name, self.threads)
        if self.seed < 0:
            raise option_error(
                self.name, "seed", self.seed, "0 or more (numpy takes no negative seed)"
            )
        if self.tuner not in TUNERS:
            raise DiagnosticException(
                f"{self.name}: option 'tuner': unknown tuner '{self.tuner}' (available: {', '.join(TUNERS)})"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.db:
            raise DiagnosticException(
                'autotune: give the database path, e.g. autotune{db="tune.jsonl"}'
            )
        try:
            target = tuning_target(self.target, self.preset or None, self.threads)
        except ValueError as e:
            raise DiagnosticException(f"autotune: option 'target': {e}") from None
        self.check_options()
        path = Path(self.db)
        if path.is_dir():
            raise DiagnosticException(
                f"autotune: database {self.db} is a directory, not a JSON-lines file"
            )
        if self.trials <= 0 and not path.exists():  # nothing to apply: most likely a mistyped path
            raise DiagnosticException(
                f"autotune: database not found: {self.db} (record one with `ziggurat tune MODEL --trials N --db {self.db}`)"
            )
        try:  # not a regular file (a FIFO, a device), no permission, a lock held too long
            check_database_file(self.db)
            if self.trials > 0:
                tune_tasks(
                    extract_tasks(op),
                    self.db,
                    self.trials,
                    tuner=self.tuner,
                    seed=self.seed,
                    only_missing=True,
                    target=target,
                )
            stats = apply_database(op, self.db, ctx, target=target)
        except DatabaseError as e:
            raise DiagnosticException(f"autotune: {e}") from None
        op.attributes[AUTOTUNE_STATS_ATTR] = stats.to_attr()  # {kernels, tuned, fallback}
