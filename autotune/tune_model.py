"""Tune all the tasks of a model within one trial budget, spread by the task scheduler.

Each scheduler step grants a task a batch of trials; `tuner.tune_task` runs them (resuming from
the database, so a killed run continues where it stopped) and reports the task's best latency
back to the scheduler, which moves the budget to where it shortens the model's latency most.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field

from autotune.database import Database
from autotune.measure.interfaces import Measurer
from autotune.progress import TuneDisplay
from autotune.task import Task, anchor_info
from autotune.task_scheduler import GradientTaskScheduler
from autotune.transfer import transfer_model
from autotune.tuner import TaskTuneResult, tune_task
from autotune.tuning_target import CpuTuningTarget, TuningTarget
from compiler.errors import ZigguratError


@dataclass
class ModelTuneSummary:
    tasks: list[Task]
    results: dict[str, TaskTuneResult] = field(default_factory=dict)  # by workload key
    trials: dict[str, int] = field(default_factory=dict)

    def table(self) -> str:
        """One row per task; `vs default` is the best record's time over the default schedule's
        timed beside it (`-`: not paired), `kept` where the default stays (no record beat it).
        A task the budget did not reach reads `not tuned`, one with no correct measurement
        `none correct`; the count of either follows the table."""
        rows = [
            f"{'task':<44}{'weight':>7}{'trials':>8}{'best GFLOP/s':>14}{'latency us':>12}"
            f"{'vs default':>16}"
        ]
        untuned = failed = 0
        for t in self.tasks:
            r = self.results.get(t.workload_key)
            trials = self.trials.get(t.workload_key, 0)
            g = r.best_gflops if r else 0.0
            head = f"{t.name[:43]:<44}{t.weight:>7}{trials:>8}"
            if g <= 0:  # no latency to show
                why = "none correct" if trials else "not tuned"
                if trials:
                    failed += 1
                else:
                    untuned += 1
                rows.append(f"{head}{why:>14}{'-':>12}{'-':>16}")
                continue
            v = r.vs_default if r else None
            vs = "-" if v is None else f"{v:.2f}x" + (" (kept)" if v >= 1.0 else "")
            rows.append(f"{head}{g:>14.1f}{t.flops / g / 1e3:>12.1f}{vs:>16}")
        if untuned:
            rows.append(f"{untuned} of {len(self.tasks)} tasks not tuned: more --trials reach them")
        if failed:
            rows.append(
                f"{failed} of {len(self.tasks)} tasks without a correct measurement: "
                "compiled with their default schedule"
            )
        return "\n".join(rows)


def tune_tasks(
    tasks: list[Task],
    db_path: str,
    trials: int,
    tuner: str = "xgb",
    seed: int = 0,
    batch: int = 16,
    only_missing: bool = False,
    progress: bool = True,
    transfer: bool = False,
    measurer: Measurer | None = None,
    threads: int = 1,
    target: TuningTarget | None = None,
) -> ModelTuneSummary:
    """Spend `trials` measurements over `tasks` (those without records only, if `only_missing`).

    With `transfer`, each task's xgb model starts from one pretrained on the other tasks' records
    in the database (autotune/transfer.py). `measurer` replaces the target's measurement here
    (e.g. an `autotune.distributed.DaskMeasurer`, whose `.target` the records then carry). `threads` > 1
    tunes the `parallel` knob too, measuring on that many threads; `target` tunes for a GPU
    (autotune/tuning_target.py) instead.
    """
    target = target or CpuTuningTarget(threads)
    threads = target.threads
    db = Database(db_path)
    infos = {t.workload_key: anchor_info(t) for t in tasks}
    if only_missing:
        tasks = [
            t
            for t in tasks
            if db.best(
                t.workload_key,
                space_hash=target.space(infos[t.workload_key]).space_hash(),
                threads=threads,
                preset=target.record_preset,
            )
            is None
        ]
    summary = ModelTuneSummary(tasks)
    if not tasks or trials <= 0:
        return summary
    db.check_writable()  # a read-only or misnamed database fails now, not after the first batch
    scheduler = GradientTaskScheduler(tasks, trials, batch, seed=seed)
    best_latency: dict[int, float] = {}
    display = TuneDisplay(trials, len(tasks)) if progress else None
    with display or nullcontext():
        while (i := scheduler.next_task(best_latency)) is not None:
            task = tasks[i]
            granted = scheduler.last_batch
            base = None
            if transfer and tuner == "xgb":
                base = transfer_model(
                    db, infos, exclude=task.workload_key, seed=seed, target=target
                )
            if display is not None:
                display.begin(i, task.name)
            result = tune_task(
                task,
                infos[task.workload_key],
                db,
                granted,
                tuner=tuner,
                seed=seed + summary.trials.get(task.workload_key, 0),
                batch=batch,
                task_index=i,
                task_count=len(tasks),
                progress=display,
                base_model=base,
                measurer=measurer,
                target=target,
            )
            if display is not None:
                display.end()
            used = len(result.curve)
            summary.trials[task.workload_key] = summary.trials.get(task.workload_key, 0) + used
            old = summary.results.get(task.workload_key)
            if old is None or result.best_gflops >= old.best_gflops:
                if old is not None:
                    result.curve = old.curve + result.curve
                summary.results[task.workload_key] = result
            else:
                old.curve.extend(max(old.best_gflops, g) for g in result.curve)
            if result.best_gflops > 0:
                best_latency[i] = task.flops / (result.best_gflops * 1e9)
            if used < granted:  # the space is exhausted
                scheduler.mark_exhausted(i, granted - used)
    return summary


def check_plotting() -> None:
    """Fail before tuning, not after it, when `--plot` cannot be drawn (matplotlib is optional)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ZigguratError("--plot needs matplotlib: pip install 'ziggurat[tune]'") from None


def plot_curves(summary: ModelTuneSummary, path: str) -> None:
    """Best-so-far GFLOP/s against trials, one line per task."""
    check_plotting()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [
        (t.name[:40], r.curve)
        for t in summary.tasks
        if (r := summary.results.get(t.workload_key)) is not None and r.curve
    ]
    # a whole model has dozens of tasks: the legend goes beside the axes, in as many columns
    # as it needs, so that it never covers the curves
    columns = max(1, -(-len(curves) // 24))
    fig, ax = plt.subplots(figsize=(8 + 3.2 * columns, 5))
    for i, (label, curve) in enumerate(curves):  # 10 colours, then the next line style
        style = ("-", "--", ":", "-.")[i // 10 % 4]
        ax.plot(range(1, len(curve) + 1), curve, style, label=label)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far")
    ax.set_title("ziggurat tuning")
    ax.grid(True, alpha=0.3)
    if curves:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=columns)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as e:  # ValueError: an unknown image format (file extension)
        raise ZigguratError(
            f"cannot write the plot {path}: {getattr(e, 'strerror', None) or e}"
        ) from None
    finally:
        plt.close(fig)
