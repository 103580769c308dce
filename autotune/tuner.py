"""The tuning loop of one task: propose with the cost model, measure on the target, record, refit.

AutoTVM's loop (Chen et al., NeurIPS 2018): simulated annealing over an XGBoost ranking model picks
a batch of unmeasured configurations, the batch is measured, every result is appended to the
database as it comes (so an interrupted run loses nothing and resumes), and the model is refit.
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

import autotune.measure  # `autotune.measure.measure` looked up per call: tests replace it
from autotune.cost_model import XGBCostModel
from autotune.database import Database, comparable_costs
from autotune.knob_space import KnobSpace
from autotune.measure import Measurer, MeasureResult, implausible
from autotune.progress import TuneDisplay, TuneProgress
from autotune.record import TUNER, WORKERS, Config, TuningRecord
from autotune.search import RandomSearch, SearchStrategy, SimulatedAnnealing
from autotune.task import Task
from autotune.tuning_target import CPU, CpuTuningTarget, TuningTarget


@dataclass
class TaskTuneResult:
    task: Task
    best_gflops: float
    best_config: Config | None
    curve: list[float] = field(default_factory=list)  # best-so-far GFLOP/s after each trial
    # the best record's time over the default schedule's timed beside it (None: not paired);
    # at 1 or more, compiling with the database keeps the default (apply_pass.beats_default)
    vs_default: float | None = None


def measured_record(
    task: Task, space: KnobSpace, config: Config, result: MeasureResult
) -> TuningRecord:
    """The record of `result`, the measurement of `config` (autotune/database.py adds the
    target and the compiler version)."""
    return TuningRecord.new(
        task.workload,
        space.space_hash(),
        config,
        space.to_passes(config, task.anchor),
        result.costs,
        result.error_kind,
        result.error,
        baseline_costs=result.baseline_costs,
        threads=space.threads,
    )


def recheck_locally(
    task: Task,
    passes: list[str],
    result: MeasureResult,
    measure: Callable[..., list[MeasureResult]],
    measure_kwargs: Mapping[str, object] | None = None,
    threads: int = 1,
) -> MeasureResult:
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


def rescaled_to_tuner(records: list[TuningRecord], costs: list[float]) -> list[float]:
    """`comparable_costs` of the records of one task, the paired ones rescaled to the least
    baseline of the records timed here (TIMED_ON not WORKERS): comparable_costs scales them to
    the least baseline of all, and a worker's baselines must not set the GFLOP/s the tuner
    shows. The same factor for every paired record: their order is the database's."""
    base = [min(r.baseline_costs) for r in records if r.paired]
    here = [min(r.baseline_costs) for r in records if r.paired and r.timed_on != WORKERS]
    if not base or not here:
        return costs
    f = min(here) / min(base)
    return [c * f if r.paired else c for r, c in zip(records, costs, strict=True)]


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
    progress: Callable[[TuneProgress], None] | bool | None = True,
    measurer: Measurer | None = None,
    base_model: XGBCostModel | None = None,
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
    autotune/tuning_target.py) replaces the CPU's space, features and measurement. `measurer`
    (autotune/measure/interfaces.py) measures the candidates (default: the target's, here).

    A remote `measurer` (`remote`: autotune/distributed.py) is not trusted with the
    best record: a timing beyond its device's peak is refused (`implausible_timing`), and a
    success that would rank above every record timed here is measured again on this machine
    (`recheck_locally`) and recorded with this machine's costs (TIMED_ON: TUNER); the others
    keep the workers' (WORKERS), and the GFLOP/s shown are on this machine's scale
    (`rescaled_to_tuner`).

    `progress` is called with each measurement (a `TuneProgress`, once its record is in `db`);
    True shows them on stderr (autotune/progress.py: a bar on a terminal, plain lines in a
    log), False or None nothing.
    """
    if progress is True:
        with TuneDisplay(trials, task_count) as display:
            display.begin(task_index, task.name)
            tuned = tune_task(
                task,
                info,
                db,
                trials,
                tuner=tuner,
                seed=seed,
                batch=batch,
                task_index=task_index,
                task_count=task_count,
                progress=display,
                measurer=measurer,
                base_model=base_model,
                start_with_default=start_with_default,
                threads=threads,
                target=target,
            )
            display.end()
        return tuned
    report = progress or None
    target = target or CpuTuningTarget(threads)
    threads = target.threads
    measure = autotune.measure.measure
    measurer = measurer or target.measurer()
    remote = measurer.remote
    peak = target.peak_flops(measurer) if remote else None
    rng = random.Random(seed)
    space = target.space(info)
    known = [  # a hand-edited config outside the space is neither a feature row nor "measured"
        r
        for r in db.records(task.workload_key, space.space_hash(), threads, target.record_preset)
        if space.contains(r.config) and target.accepts(r)
    ]
    records = list(known)  # and each new one: scored together (see scores)
    xs: list[np.ndarray] = []

    def scores(*more: TuningRecord) -> list[float]:
        """GFLOP/s of every record (and `more`), from costs comparable across the host's phases
        (paired records: database.comparable_costs, on this machine's scale); 0 for a failure."""
        costs = rescaled_to_tuner([*records, *more], comparable_costs([*records, *more]))
        return [task.flops / c / 1e9 if c < float("inf") else 0.0 for c in costs]

    def ranks_above_the_tuners(record: TuningRecord) -> bool:
        """Whether, with `record`, the best record would be one timed by the workers (it, or
        another whose order its baselines change)."""
        ys = scores(record)
        top = max(range(len(ys)), key=lambda i: (ys[i], -i))  # the first of equals, as ranked
        return ys[top] > 0 and [*records, record][top].timed_on == WORKERS

    def feats(configs: Sequence[Config]) -> np.ndarray:
        return target.features(info, [space.to_schedule(c) for c in configs])

    for r in known:
        xs.append(feats([r.config])[0])
    ys = scores()
    curve: list[float] = []
    best = max(ys, default=0.0)
    best_config = next((r.config for r, y in zip(known, ys) if y == best and y > 0), None)
    measured = {space.key(r.config) for r in known}
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
        results = measurer(task, [space.to_passes(c, task.anchor) for c in configs])
        # where they ran: a remote measurer (autotune.distributed) names its workers' target;
        # None (a LocalMeasurer) leaves it to the database, which writes this host's
        where = measurer.target
        in_batch = min(len(configs), len(results))
        for j, (config, result) in enumerate(zip(configs, results)):
            if remote:  # a worker's word is not enough: a timing beyond the device is refused
                result = implausible(result, task.flops, peak)
                if not target.pairs_baselines and result.baseline_costs:
                    result = replace(result, baseline_costs=[])
            record = measured_record(task, space, config, result)
            if remote and result.ok:
                record = replace(record, timed_on=WORKERS)
                if ranks_above_the_tuners(record):  # measured again here, correctness and time
                    passes = space.to_passes(config, task.anchor)
                    kwargs = measurer.measure_kwargs
                    result = recheck_locally(task, passes, result, measure, kwargs, threads)
                    record = measured_record(task, space, config, result)
                    if result.ok:
                        record = replace(record, timed_on=TUNER)
            record = target.stamp(record)
            if where is not None:
                record = replace(record, target=dict(where))
            db.append(record)
            records.append(record)
            measured.add(space.key(config))
            xs.append(feats([config])[0])
            ys = scores()
            g, best = ys[-1], max(ys)
            if best > 0:
                best_config = records[ys.index(best)].config
            curve.append(best)
            done += 1
            if report is not None:
                report(
                    TuneProgress(
                        task_index,
                        task_count,
                        done,
                        trials,
                        g,
                        best,
                        time.perf_counter() - start,
                        batch_left=in_batch - 1 - j,
                    )
                )
        if model is not None:
            model.fit(np.stack(xs), np.array(ys))
    vs_default = None
    if best > 0:
        top = records[ys.index(best)]
        if top.baseline_costs:
            vs_default = min(top.costs) / min(top.baseline_costs)
    return TaskTuneResult(task, best, best_config, curve, vs_default)
