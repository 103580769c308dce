"""The worker side: the functions dask runs on a worker (`_remote_chunk` around `_measure_chunk`,
`_remote_target`), the worker's target, and a chunk's reply encoded as JSON text. Workers unpickle
these functions by module path, so they stay here (and are re-exported by autotune.distributed);
apart because nothing in this module runs on the tuner."""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autotune.distributed.errors import _MAX_TEXT, _clean
from autotune.measure import (
    MeasureResult,
    device_info,
    host_target,
    measure,
)
from autotune.tuning_target import CPU

_CHUNK_LOCK = threading.Lock()  # per worker process: measure's runner and caches are not threadsafe


def _measure_chunk(
    task: Any, candidates: list[list[str]], kwargs: dict[str, Any]
) -> list[MeasureResult]:
    """Runs on a dask worker: measure one chunk there (one chunk at a time per worker process)."""
    with _CHUNK_LOCK:
        proc = multiprocessing.current_process()
        # a nanny's worker process is daemonic, and multiprocessing gives a daemon no children
        # (measure's build pool); measure terminates its pool itself and the runner dies with us
        config: dict[str, Any] = proc._config  # type: ignore[attr-defined]
        daemon = config.get("daemon")
        config["daemon"] = False
        try:
            return measure(task, candidates, **kwargs)
        finally:
            if daemon is None:
                config.pop("daemon", None)
            else:
                config["daemon"] = daemon


def encode_reply(
    results: list[MeasureResult] | None, target: Mapping[str, str], error: str = ""
) -> str:
    """A chunk's reply as the tuner reads it: JSON text (plain data, nothing to unpickle)."""
    if results is None:
        return json.dumps({"target": dict(target), "error": error[:_MAX_TEXT]})
    rows = []
    for r in results:
        if not isinstance(r, MeasureResult):
            raise TypeError(f"the chunk gave a {type(r).__name__}, not a MeasureResult")
        rows.append(
            {
                "costs": r.costs,
                "baseline_costs": r.baseline_costs,
                "error_kind": r.error_kind,
                "build_s": r.build_s,
                "run_s": r.run_s,
                "error": r.error[:_MAX_TEXT] if isinstance(r.error, str) else r.error,
            }
        )
    return json.dumps({"target": dict(target), "results": rows})


def _remote_chunk(
    chunk_fn: Callable[..., list[MeasureResult]],
    task: Any,
    candidates: list[list[str]],
    kwargs: dict[str, Any],
) -> str:
    """The dask task: run `chunk_fn` and answer JSON text, a failure included (never raises)."""
    try:
        target = worker_target(str(kwargs.get("target", CPU)))
    except Exception as e:
        return encode_reply(None, {}, f"worker_target: {type(e).__name__}: {e}")
    try:
        results = chunk_fn(task, candidates, kwargs)
        if not isinstance(results, list):
            raise TypeError(f"the chunk gave a {type(results).__name__}, not a list")
        return encode_reply(results, target)
    except Exception as e:
        return encode_reply(None, target, f"{type(e).__name__}: {e}")


def worker_target(api: str = CPU) -> dict[str, str]:
    """What this machine measures `api` on: its CPU ({cpu, features}), and for a GPU api the
    device too (canonical JSON of gpu_runner.device_info; RuntimeError if `api` cannot run here)."""
    target = dict(host_target())
    if api != CPU:
        target["device"] = json.dumps(device_info(api), sort_keys=True)
    return target


def _remote_target(api: str = CPU) -> str:
    """The dask task that asks a worker what it measures on (or why it cannot)."""
    try:
        return json.dumps(worker_target(api))
    except Exception as e:
        return json.dumps({"error": f"{type(e).__name__}: {_clean(e, 500)}"})
