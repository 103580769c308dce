"""The tuning loop of one task: propose with the cost model, measure on the target, record, refit.

AutoTVM's loop (Chen et al., NeurIPS 2018): simulated annealing over an XGBoost ranking model picks
a batch of unmeasured configurations, the batch is measured, every result is appended to the
database as it comes (so an interrupted run loses nothing and resumes), and the model is refit.
"""

from __future__ import annotations

import random
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import autotune.measure  # `autotune.measure.measure` looked up per call: tests replace it
from autotune.cost_model import XGBCostModel
from autotune.database import Database, comparable_costs
from autotune.measure import MeasureResult, cpu_peak_flops, gpu_peak_flops, implausible
from autotune.search import RandomSearch, SearchStrategy, SimulatedAnnealing
from autotune.space import SearchSpace
from autotune.task import Task
from autotune.tuning_target import CPU, TuningTarget


@dataclass
class TuneProgress:
    """What a progress line shows for one task."""

    task_index: int
    task_count: int
    trials_done: int
    trials_total: int
    current_gflops: float
    best_gflops: float
    elapsed_s: float

    @property
    def eta_s(self) -> float:
        if self.trials_done == 0:
            return float("nan")
        return self.elapsed_s / self.trials_done * (self.trials_total - self.trials_done)

    def line(self) -> str:
        eta = "?" if self.eta_s != self.eta_s else f"{self.eta_s:5.0f}s"
        return (
            f"task {self.task_index + 1}/{self.task_count}  trials {self.trials_done}/{self.trials_total}  "
            f"current {self.current_gflops:7.1f} GFLOP/s  best {self.best_gflops:7.1f} GFLOP/s  "
            f"elapsed {self.elapsed_s:5.0f}s  left {eta}"
        )


@dataclass
class TaskTuneResult:
    task: Task
    best_gflops: float
    best_config: dict | None
    curve: list[float] = field(default_factory=list)  # best-so-far GFLOP/s after each trial
    # the best record's time over the default schedule's timed beside it (None: not paired);
    # at 1 or more, compiling with the database keeps the default (apply_pass.beats_default)
    vs_default: float | None = None


def make_record(task: Task, space: SearchSpace, config: dict, result) -> dict:
    """One database record (autotune/database.py adds the target and the compiler version)."""
    return {
        "workload_key": task.workload_key,
        "task_name": task.name,
        "space_hash": space.space_hash(),
        "config": config,
        "passes": space.to_passes(config, task.anchor),
        "costs": list(result.costs),
        **({"baseline_costs": list(result.baseline_costs)} if result.baseline_costs else {}),
        "error_kind": result.error_kind,
        "error": result.error,
        "flops": task.flops,
        "threads": space.threads,
        "timestamp": time.time(),
    }


TIMED_ON = "timed_on"
"""The field of a remote tune's successful records that says where its costs were timed: TUNER
(re-timed on this machine's device before it could rank as the best) or WORKERS (the workers'
word, never ranked above the tuner's own timings: see tune_task)."""
TUNER, WORKERS = "tuner", "workers"


def recheck_locally(
    task: Task,
    passes: list[str],
    result,
    measure: Callable,
    measure_kwargs: dict | None = None,
    threads: int = 1,
):
    """A remote success about to become the task's best, measured again here: `compile` applies
    the best record, so a worker that lies about correctness or speed must not set it. The result
    is this machine's measurement (checked against the reference, timed beside the default
    schedule as the workers time it); a failure here makes it `wrong_result` (with a warning)."""
    given = measure_kwargs or {}
    # target and preset: a GPU tune is measured again on this machine's device of the api
    keep = ("rtol", "atol", "timeout_s", "target", "preset", "repeat", "number")
    kwargs = {k: v for k, v in given.items() if k in keep}
    if given.get("target", CPU) == CPU:
        kwargs.setdefault("threads", given.get("threads", threads))
    try:
        (local,) = measure(task, [passes], **kwargs)
        why = "" if local.ok else f"{local.error_kind}: {local.error}"
    except Exception as e:
        why = f"the re-check failed: {type(e).__name__}: {e}"
    if not why:
        return MeasureResult(
            list(local.costs), None, "", local.build_s, local.run_s, list(local.baseline_costs)
        )
    warnings.warn(
        f"{task.name}: a config measured remotely as the fastest so far failed the local "
        f"correctness re-check ({why[:200]}); recorded as wrong_result",
        stacklevel=2,
    )
    why = f"remote success, local re-check failed: {why}"
    return MeasureResult(list(result.costs), "wrong_result", why, result.build_s, result.run_s)


def remote_peak_flops(measure_fn: Any, target: TuningTarget) -> float | None:
    """The most FLOP/s a remote measurer's device could reach (autotune/measure/peak.py): its
    workers' device on a GPU target, else `target.threads` cores of its workers' CPU (`.target`
    features; this host's without them)."""
    if target.is_gpu:
        device = getattr(measure_fn, "device", None) or target.record_fields().get("device")
        return gpu_peak_flops(device) if isinstance(device, dict) else None
    where = getattr(measure_fn, "target", None)
    features = where.get("features") if isinstance(where, dict) else None
    return cpu_peak_flops(target.threads, features if isinstance(features, str) else None)


def _paired_ok(r: dict) -> bool:
    return r.get("error_kind") is None and bool(r.get("costs")) and bool(r.get("baseline_costs"))


def rescaled_to_tuner(records: list[dict], costs: list[float]) -> list[float]:
    """`comparable_costs` of the records of one task, the paired ones rescaled to the least
    baseline of the records timed here (TIMED_ON not WORKERS): comparable_costs scales them to
    the least baseline of all, and a worker's baselines must not set the GFLOP/s the tuner
    shows. The same factor for every paired record: their order is the database's."""
    base = [min(r["baseline_costs"]) for r in records if _paired_ok(r)]
    here = [
        min(r["baseline_costs"]) for r in records if _paired_ok(r) and r.get(TIMED_ON) != WORKERS
    ]
    if not base or not here:
        return costs
    f = min(here) / min(base)
    return [c * f if _paired_ok(r) else c for r, c in zip(records, costs, strict=True)]


def print_progress(p: TuneProgress) -> None:
    sys.stderr.write("\r" + p.line())
    sys.stderr.flush()


def tune_task(
    task: Task,
    info,
    db: Database,
    trials: int,
    tuner: str = "xgb",
    seed: int = 0,
    batch: int = 16,
    task_index: int = 0,
    task_count: int = 1,
    progress: Callable[[TuneProgress], None] | None = print_progress,
    measure_fn: Callable | None = None,
    base_model=None,
    start_with_default: bool = True,
    threads: int = 1,
    target: TuningTarget | None = None,
) -> TaskTuneResult:
    """Tune one task for `trials` new measurements (records already in `db` count as known).

    `base_model` (an `XGBCostModel`, e.g. from `autotune.transfer.transfer_model`) seeds the xgb
    tuner: its trees rank the first batch and every refit continues boosting from them.
    `start_with_default=False` leaves out the default schedule as the first trial (search
    experiments measure the search, not the default-schedule heuristic). With `threads` > 1 the
    space has the `parallel` knob and candidates run on that many threads. `target` (a GPU one:
    autotune/tuning_target.py) replaces the CPU's space, features and measurement.

    A remote `measure_fn` (`remote = True`: autotune/distributed.py) is not trusted with the
    best record: a timing beyond its device's peak is refused (`implausible_timing`), and a
    success that would rank above every record timed here is measured again on this machine
    (`recheck_locally`) and recorded with this machine's costs (TIMED_ON: TUNER); the others
    keep the workers' (WORKERS), and the GFLOP/s shown are on this machine's scale
    (`rescaled_to_tuner`).
    """
    target = target or TuningTarget(threads=threads)
    threads = target.threads
    measure = autotune.measure.measure
    measure_fn = measure_fn or target.measure_fn()
    peak = remote_peak_flops(measure_fn, target) if getattr(measure_fn, "remote", False) else None
    rng = random.Random(seed)
    space = target.space(info)
    known = [  # a hand-edited config outside the space is neither a feature row nor "measured"
        r
        for r in db.records(task.workload_key, space.space_hash(), threads, target.record_preset)
        if space.contains(r["config"]) and target.accepts(r)
    ]
    records = list(known)  # and each new one: scored together (see scores)
    xs: list[np.ndarray] = []

    def scores(*more: dict) -> list[float]:
        """GFLOP/s of every record (and `more`), from costs comparable across the host's phases
        (paired records: database.comparable_costs, on this machine's scale); 0 for a failure."""
        costs = rescaled_to_tuner([*records, *more], comparable_costs([*records, *more]))
        return [task.flops / c / 1e9 if c < float("inf") else 0.0 for c in costs]

    def ranks_above_the_tuners(record: dict) -> bool:
        """Whether, with `record`, the best record would be one timed by the workers (it, or
        another whose order its baselines change)."""
        ys = scores(record)
        top = max(range(len(ys)), key=lambda i: (ys[i], -i))  # the first of equals, as ranked
        return ys[top] > 0 and [*records, record][top].get(TIMED_ON) == WORKERS

    def feats(configs):
        return target.features(info, [space.to_schedule(c) for c in configs])

    for r in known:
        xs.append(feats([r["config"]])[0])
    ys = scores()
    curve: list[float] = []
    best = max(ys, default=0.0)
    best_config = next((r["config"] for r, y in zip(known, ys) if y == best and y > 0), None)
    measured = {space.key(r["config"]) for r in known}
    model = None if tuner == "random" else XGBCostModel(seed=seed)  # random: no model
    if model is not None and base_model is not None:
        model.fit(np.zeros((0, 0)), np.zeros(0), base=base_model)
    if model is not None and xs:
        model.fit(np.stack(xs), np.array(ys))

    searcher: SearchStrategy
    if model is None:
        searcher = RandomSearch(space, rng)
    else:
        searcher = SimulatedAnnealing(space, model, feats, rng)
    start = time.perf_counter()
    done = 0
    while done < trials:
        configs = searcher.propose(min(batch, trials - done), measured)
        default = space.default_config()
        if (
            start_with_default and done == 0 and space.key(default) not in measured
        ):  # the untuned baseline comes first
            configs = [default, *[c for c in configs if space.key(c) != space.key(default)]][
                : max(1, len(configs))
            ]
        if not configs:
            break  # the space is exhausted
        results = measure_fn(task, [space.to_passes(c, task.anchor) for c in configs])
        # where they ran: a remote measurer (autotune.distributed) names its workers' target;
        # None (measure.measure) leaves it to the database, which writes this host's
        where = getattr(measure_fn, "target", None)
        extra = target.record_fields()
        remote = getattr(measure_fn, "remote", False)
        for config, result in zip(configs, results):
            if remote:  # a worker's word is not enough: a timing beyond the device is refused
                result = implausible(result, task.flops, peak)
                if target.is_gpu and result.baseline_costs:  # GPU timings are not paired here
                    result = replace(result, baseline_costs=[])
            record = make_record(task, space, config, result)
            if remote and result.ok:
                record[TIMED_ON] = WORKERS
                if ranks_above_the_tuners(record):  # measured again here, correctness and time
                    passes = space.to_passes(config, task.anchor)
                    kwargs = getattr(measure_fn, "measure_kwargs", None)
                    result = recheck_locally(task, passes, result, measure, kwargs, threads)
                    record = make_record(task, space, config, result)
                    if result.ok:
                        record[TIMED_ON] = TUNER
            record.update(extra)
            if where is not None:
                record["target"] = dict(where)
            db.append(record)
            records.append(record)
            measured.add(space.key(config))
            xs.append(feats([config])[0])
            ys = scores()
            g, best = ys[-1], max(ys)
            if best > 0:
                best_config = records[ys.index(best)]["config"]
            curve.append(best)
            done += 1
            if progress is not None:
                progress(
                    TuneProgress(
                        task_index, task_count, done, trials, g, best, time.perf_counter() - start
                    )
                )
        if model is not None:
            model.fit(np.stack(xs), np.array(ys))
    vs_default = None
    if best > 0:
        top = records[ys.index(best)]
        if top.get("baseline_costs"):
            vs_default = min(top["costs"]) / min(top["baseline_costs"])
    return TaskTuneResult(task, best, best_config, curve, vs_default)
