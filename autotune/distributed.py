"""Measure tuning candidates on other machines: a dask.distributed cluster runs `measure` there.

A measurement is a function of (task, candidate passes, target) only, so a batch can be measured
anywhere that has the same ziggurat version: `DaskMeasurer` splits each batch into about one chunk
per worker, each chunk one dask task calling `autotune.measure.measure` on its worker (which builds
in parallel and reuses that worker process's runner and reference cache), and returns the results
in candidate order. Records then carry the workers' target (`.target`), not the tuner's machine's.

    # one machine (any): the scheduler
    dask scheduler                                   # listens on tcp://HOST:8786
    # each measuring machine (same ziggurat version, `pip install 'ziggurat[tune]'`),
    # one worker with one thread per machine (measurements must not share the cores)
    dask worker tcp://HOST:8786 --nworkers 1 --nthreads 1
    # the tuner (the cost model and the database stay here)
    ziggurat tune model.onnx --trials 1000 --db tune.jsonl --dask tcp://HOST:8786

or from Python: `tune_task(..., measure_fn=DaskMeasurer("tcp://HOST:8786"))`.

All workers must report the same target (LLVM CPU name and features): a tuning database holds the
measurements of one target, so a mixed cluster is refused (run one scheduler per kind of machine).
A chunk whose dask task fails (an exception, a worker that died or left, no answer in time) becomes
a `runtime_error` result for each of its candidates, and tuning goes on.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autotune.measure import MeasureResult, host_target, measure
from compiler.errors import ZigguratError

INSTALL_HINT = "pip install 'ziggurat[tune]'"
_CHUNK_LOCK = threading.Lock()  # per worker process: measure's runner and caches are not threadsafe


class DaskSetupError(ZigguratError, RuntimeError):
    """No usable cluster: dask missing, the scheduler unreachable, no workers, mixed targets
    (a user error: the CLI prints it as one `ziggurat: error:` line)."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise DaskSetupError(
            f"measuring on a dask cluster needs dask.distributed: {INSTALL_HINT}"
        ) from e
    return distributed


def _measure_chunk(task: Any, candidates: list[list[str]], kwargs: dict[str, Any]) -> list[MeasureResult]:
    """Runs on a dask worker: measure one chunk there (one chunk at a time per worker process)."""
    with _CHUNK_LOCK:
        proc = multiprocessing.current_process()
        # a nanny's worker process is daemonic, and multiprocessing gives a daemon no children
        # (measure's build pool); measure terminates its pool itself and the runner dies with us
        daemon = proc._config.get("daemon")
        proc._config["daemon"] = False
        try:
            return measure(task, candidates, **kwargs)
        finally:
            if daemon is None:
                proc._config.pop("daemon", None)
            else:
                proc._config["daemon"] = daemon


def _describe(target: Mapping[str, str], others: list[Mapping[str, str]]) -> str:
    """'cpu NAME', plus the features it has that another of the targets lacks."""
    out = f"cpu {target.get('cpu', '?')}"
    mine = set(str(target.get("features", "")).split(","))
    diff: list[str] = []
    for other in others:
        theirs = set(str(other.get("features", "")).split(","))
        diff += sorted(f for f in mine - theirs if f and f not in diff)
    if diff:
        shown = ",".join(diff[:6]) + (",..." if len(diff) > 6 else "")
        out += f" (features {shown})"
    return out


def common_target(targets: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The one target every worker (address -> host_target()) reports; DaskSetupError if not."""
    if not targets:
        raise DaskSetupError("no dask workers to measure on")
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for address, target in targets.items():
        groups.setdefault(tuple(sorted(dict(target).items())), []).append(address)
    if len(groups) == 1:
        return dict(next(iter(groups)))
    kinds = [dict(k) for k in groups]
    parts = [
        f"{', '.join(sorted(addrs))}: {_describe(kind, [k for k in kinds if k is not kind])}"
        for kind, addrs in zip(kinds, groups.values())
    ]
    raise DaskSetupError(
        f"the dask workers measure on {len(groups)} different targets ({'; '.join(parts)}); "
        "a tuning database holds the measurements of one target: connect one kind of machine per "
        "scheduler"
    )


class DaskMeasurer:
    """`measure_fn` for `tune_task`: measures each batch on the workers of a dask cluster.

    `cluster` is a scheduler address ("tcp://host:8786"; the client is ours and `close` closes it)
    or a `distributed.Client` (left open). `measure_kwargs` go to `measure` on the workers (repeat,
    number, timeout_s, workers, rtol, atol). `chunk_timeout_s` bounds the wait for one chunk
    (default: 120 s plus 3 x the run timeout per candidate); `chunk_fn` replaces the function run
    per chunk (tests). `.target` is the workers' common host target.
    """

    def __init__(
        self,
        cluster: str | Any,
        measure_kwargs: Mapping[str, Any] | None = None,
        chunk_timeout_s: float | None = None,
        connect_timeout_s: float = 60.0,
        chunk_fn: Callable[..., list[MeasureResult]] = _measure_chunk,
    ) -> None:
        distributed = _import_distributed()
        self.measure_kwargs = dict(measure_kwargs or {})
        for name in ("kernel_irs", "runner"):
            if name in self.measure_kwargs:
                raise ValueError(f"DaskMeasurer: measure's {name}= cannot be sent to workers")
        self.chunk_timeout_s = chunk_timeout_s
        self._chunk_fn = chunk_fn
        self._wait = distributed.wait
        self.address = cluster if isinstance(cluster, str) else "?"
        if isinstance(cluster, str):
            try:
                self.client = distributed.Client(cluster, timeout=connect_timeout_s)
            except (OSError, TimeoutError) as e:
                raise DaskSetupError(f"cannot reach the dask scheduler at {cluster}: {e}") from e
            self._owns_client = True
        else:
            self.client = cluster
            self._owns_client = False
            self.address = str(getattr(getattr(cluster, "scheduler", None), "address", "?"))
        try:
            try:
                self.client.wait_for_workers(1, timeout=connect_timeout_s)
            except TimeoutError as e:
                raise DaskSetupError(
                    f"no dask worker joined the scheduler at {self.address} "
                    f"within {connect_timeout_s:g} s"
                ) from e
            self._targets: dict[str, dict[str, str]] = {}
            self.target: dict[str, str] = {}
            self._check_workers()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ workers

    def _worker_addresses(self) -> list[str]:
        try:
            info = self.client.scheduler_info(n_workers=-1)  # all of them, not the first few
        except TypeError:  # an older distributed: it lists them all
            info = self.client.scheduler_info()
        return sorted(info["workers"])

    def _check_workers(self) -> list[str]:
        """The current workers; ask the new ones for their target (all must be the same)."""
        addresses = self._worker_addresses()
        new = [a for a in addresses if a not in self._targets]
        if new:
            reported = self.client.run(host_target, workers=new)
            targets = {**self._targets, **{a: dict(t) for a, t in reported.items()}}
            target = common_target(targets)  # raises before a mixed cluster measures anything
            self._targets, self.target = targets, target
        return addresses

    @property
    def workers(self) -> list[str]:
        """Addresses of the workers whose target was checked."""
        return sorted(self._targets)

    @property
    def n_workers(self) -> int:
        return len(self._targets)

    # ------------------------------------------------------------------ measuring

    def _timeout(self, n: int) -> float:
        if self.chunk_timeout_s is not None:
            return self.chunk_timeout_s
        return 120.0 + 3.0 * float(self.measure_kwargs.get("timeout_s", 10.0)) * n

    def __call__(self, task: Any, candidates: list[list[str]]) -> list[MeasureResult]:
        if self.client is None:
            raise RuntimeError("DaskMeasurer: measuring after close()")
        candidates = [list(c) for c in candidates]
        if not candidates:
            return []
        try:
            addresses = self._check_workers() or self.workers
        except DaskSetupError:
            raise
        except Exception as e:
            # no chunk failed, nothing was measured: stop (the records so far are kept; a later
            # run resumes) rather than record every remaining config as a failure
            raise DaskSetupError(
                f"lost the dask scheduler at {self.address}: {type(e).__name__}: {e}"
            ) from e
        n = max(1, min(len(addresses), len(candidates)))
        size = math.ceil(len(candidates) / n)
        chunks = [candidates[i : i + size] for i in range(0, len(candidates), size)]
        futures: list[Any] = []
        for i, chunk in enumerate(chunks):
            try:
                where = [addresses[i % len(addresses)]] if addresses else None
                futures.append(
                    self.client.submit(
                        self._chunk_fn, task, chunk, self.measure_kwargs,
                        pure=False, workers=where, allow_other_workers=True,
                    )
                )
            except Exception as e:
                futures.append(e)
        timeout = max(self._timeout(len(c)) for c in chunks)
        pending = [f for f in futures if not isinstance(f, BaseException)]
        try:
            self._wait(pending, timeout=timeout)
        except Exception:  # a timeout, or cancelled futures: each chunk's status says which
            pass
        results: list[MeasureResult] = []
        for chunk, future in zip(chunks, futures, strict=True):
            results += self._collect(chunk, future, timeout)
        return results

    def _collect(self, chunk: list[list[str]], future: Any, timeout: float) -> list[MeasureResult]:
        if isinstance(future, BaseException):
            return [_failed(f"submit: {type(future).__name__}: {future}") for _ in chunk]
        status = future.status
        if status == "finished":
            try:
                got = future.result()
            except Exception as e:
                return [_failed(f"{type(e).__name__}: {e}") for _ in chunk]
            if isinstance(got, list) and len(got) == len(chunk) and all(
                isinstance(r, MeasureResult) for r in got
            ):
                return got
            size = len(got) if isinstance(got, list) else "?"
            why = f"the chunk gave {type(got).__name__} ({size} items) for {len(chunk)} candidates"
            return [_failed(why) for _ in chunk]
        if status == "error":
            e = future.exception()
            why = f"{type(e).__name__}: {e}"
        else:  # pending, lost, cancelled
            future.cancel()
            why = f"no result within {timeout:g} s (task {status})"
        return [_failed(why) for _ in chunk]

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        client, self.client = getattr(self, "client", None), None
        if client is not None and self._owns_client:
            client.close()

    def __enter__(self) -> DaskMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DaskMeasurer({self.n_workers} workers, cpu {self.target.get('cpu', '?')})"


def _failed(why: str) -> MeasureResult:
    why = why if len(why) <= 1000 else why[:997] + "..."
    return MeasureResult(error_kind="runtime_error", error=f"dask: {why}")


__all__ = ["DaskMeasurer", "DaskSetupError", "common_target"]
