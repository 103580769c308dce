"""Checking what workers send: a chunk's JSON reply decoded with every field checked
(`decode_reply`), targets parsed and described, and the one target a cluster must share
(`common_target`). Nothing a worker writes is trusted; a reply that fails a check becomes failed
results naming why. Apart from the measurer, which only calls these."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, cast

from autotune.distributed.errors import DaskSetupError, _clean
from autotune.measure import (
    ERROR_KINDS,
    MeasureResult,
)

_RESULT_FIELDS = ("costs", "error_kind", "error", "build_s", "run_s")
_OPTIONAL_RESULT_FIELDS = ("baseline_costs",)  # a paired measurement's (MeasureResult)
_MAX_COSTS = 10_000


def _number(x: object) -> float | None:
    """x as a finite float, None if it is not a finite number (bools are not numbers here)."""
    if type(x) not in (int, float):
        return None
    f = float(cast(float, x))
    return f if math.isfinite(f) else None


def _parse_target(x: object) -> dict[str, str] | None:
    """A worker's target ({cpu, features}, plus a GPU's device as JSON text), checked."""
    if not isinstance(x, dict) or set(x) not in (
        {"cpu", "features"},
        {"cpu", "features", "device"},
    ):
        return None
    if not all(isinstance(v, str) and len(v) <= 10_000 for v in x.values()):
        return None
    if "device" in x and not isinstance(_device_of(x), dict):
        return None
    return {k: x[k] for k in ("cpu", "features", "device") if k in x}


def _device_of(target: Mapping[str, str]) -> dict[str, Any] | None:
    """The device a target's JSON text names (None: a CPU target, or text that is not one)."""
    try:
        device = json.loads(target["device"]) if "device" in target else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(device, dict) or not all(isinstance(k, str) for k in device):
        return None
    return device


def _parse_result(row: object) -> MeasureResult | str:
    """One result of a reply, or why it is not one."""
    if not isinstance(row, dict):
        return f"a {type(row).__name__}, not an object"
    allowed = {*_RESULT_FIELDS, *_OPTIONAL_RESULT_FIELDS}
    if not set(_RESULT_FIELDS) <= set(row) <= allowed:
        missing = sorted(set(_RESULT_FIELDS) - set(row))
        extra = sorted(_clean(k, 40) for k in set(row) - allowed)
        return f"fields: missing {missing}, unexpected {extra}"
    kind, error = row["error_kind"], row["error"]
    if kind is not None and kind not in ERROR_KINDS:
        return f"unknown error_kind {_clean(repr(kind), 60)}"
    if not isinstance(error, str):
        return f"error is a {type(error).__name__}, not a string"
    values = _seconds("costs", row["costs"])
    baseline = _seconds("baseline_costs", row.get("baseline_costs", []))
    if isinstance(values, str) or isinstance(baseline, str):
        return values if isinstance(values, str) else cast(str, baseline)
    if kind is None and not values:
        return "a success without costs"
    build_s, run_s = _number(row["build_s"]), _number(row["run_s"])
    if build_s is None or run_s is None or build_s < 0 or run_s < 0:
        return "build_s/run_s are not finite non-negative numbers"
    return MeasureResult(values, kind, _clean(error), build_s, run_s, baseline)


def _seconds(name: str, costs: object) -> list[float] | str:
    """A result's list of seconds per call, checked, or why it is not one."""
    if not isinstance(costs, list) or len(costs) > _MAX_COSTS:
        return f"{name} is not a list" if not isinstance(costs, list) else f"too many {name}"
    values: list[float] = []
    for c in costs:
        v = _number(c)
        if v is None or v <= 0:
            return f"{name[:-1]} {_clean(repr(c), 60)} is not a finite positive number of seconds"
        values.append(v)
    return values


def decode_reply(reply: object, n: int, target: Mapping[str, str]) -> list[MeasureResult]:
    """The results of a chunk of `n` candidates from a worker's reply, checked (nothing in it is
    trusted): a reply that fails a check fails every candidate of the chunk, a result that fails
    one fails its candidate, each as a `runtime_error` naming why."""
    if not isinstance(reply, str):
        return _all_failed(f"the worker's reply is a {type(reply).__name__}, not JSON text", n)
    if len(reply) > (64 + 16 * n) * 1024:
        return _all_failed(f"the worker's reply is too large ({len(reply)} characters)", n)
    try:
        data = json.loads(reply)
    except (ValueError, RecursionError) as e:
        return _all_failed(f"the worker's reply is not JSON: {e}", n)
    if not isinstance(data, dict) or not set(data) <= {"target", "results", "error"}:
        return _all_failed("the worker's reply is not a chunk reply", n)
    where = _parse_target(data.get("target"))
    if "error" in data and isinstance(data["error"], str) and "results" not in data:
        return _all_failed(_clean(data["error"]), n)
    if where is None:
        return _all_failed("the worker's reply names no valid target", n)
    if where != dict(target):
        why = f"measured on {_describe(where, [target])}, not on the cluster's "
        return _all_failed(why + _describe(target, [where]), n)
    rows = data.get("results")
    if not isinstance(rows, list) or len(rows) != n:
        size = len(rows) if isinstance(rows, list) else type(rows).__name__
        return _all_failed(f"the worker's reply has {size} results for {n} candidates", n)
    out = []
    for i, row in enumerate(rows):
        r = _parse_result(row)
        out.append(r if isinstance(r, MeasureResult) else _failed(f"result {i} rejected: {r}"))
    return out


def _describe(target: Mapping[str, str], others: list[Mapping[str, str]]) -> str:
    """'cpu NAME', plus the features it has that another of the targets lacks; for a GPU target
    whose device differs from another's, the device ('device NAME (driver ...)')."""
    device = _device_of(target)
    if device is not None and any(_device_of(o) != device for o in others):
        details = ", ".join(
            f"{k} {device[k]}"
            for k in ("driver_version", "compute_capability", "opencl_version")
            if k in device
        )
        return _clean(
            f"device {device.get('name', '?')}" + (f" ({details})" if details else ""), 300
        )
    out = f"cpu {target.get('cpu', '?')}"
    mine = set(str(target.get("features", "")).split(","))
    diff: list[str] = []
    for other in others:
        theirs = set(str(other.get("features", "")).split(","))
        diff += sorted(f for f in mine - theirs if f and f not in diff)
    if diff:
        shown = ",".join(diff[:6]) + (",..." if len(diff) > 6 else "")
        out += f" (features {shown})"
    return _clean(out, 300)


def common_target(targets: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The one target every worker (address -> worker_target()) reports; DaskSetupError if not."""
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


def _all_failed(why: str, n: int) -> list[MeasureResult]:
    return [_failed(why) for _ in range(n)]


def _failed(why: str) -> MeasureResult:
    why = why if len(why) <= 1000 else why[:997] + "..."
    return MeasureResult(error_kind="runtime_error", error=f"dask: {why}")
