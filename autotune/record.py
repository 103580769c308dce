"""A tuning record and its workload: what one measurement of one config says, typed.

The database (autotune/database.py) stores records as JSON lines; `TuningRecord.from_json` is
the one place a line's object becomes a record (checked by `validate_record`: a malformed one
raises `RecordError` saying why), and `to_json` the one place a record becomes an object again.
Everything between reads attributes. `TuningRecord.new` is the one constructor of a fresh
record (timestamped now; the database fills in its compiler version and, unless a remote
measurer named another, this host's target).

The JSON object, field by field (unchanged since the first databases, which still load):

    workload_key, task_name, flops   the workload (Workload: key, name, FLOPs per call)
    space_hash, config, passes       the config of that space, and the passes that replay it
    costs, baseline_costs            seconds per call; the default schedule's, timed beside it
                                     (absent when not paired)
    error_kind, error                None and "" on success (else one of ERROR_KINDS)
    threads                          CPU threads it ran on (absent: 1)
    compiler_version, target, timestamp
    device, preset, l2_policy        a GPU target's (absent on the CPU)
    timed_on                         a remote tune's successes: "tuner" or "workers"

Any other field is kept as it was read (`extra`) and written back with the record.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Config = dict[str, Any]
"""A config of a search space: a small JSON object of knobs (autotune/space.py, gpu_space.py)."""

REQUIRED_FIELDS = (
    "workload_key",
    "compiler_version",
    "space_hash",
    "config",
    "costs",
    "error_kind",
)
INT_KNOBS = ("vector", "unroll", "parallel")
"""Config knobs that are one integer (autotune/space.py)."""
LIST_KNOBS = ("reg", "tile", "order", "pack")
"""Config knobs that are a list of integers (autotune/space.py)."""
TIMED_ON = "timed_on"
"""The field of a remote tune's successful records that says where its costs were timed: TUNER
(re-timed on this machine's device before it could rank as the best) or WORKERS (the workers'
word, never ranked above the tuner's own timings: see autotune/tuner.py)."""
TUNER, WORKERS = "tuner", "workers"

_OPTIONAL_FIELDS = ("compiler_version", "target", "timestamp", "device", "preset", "l2_policy")
_FIELDS = frozenset(
    {
        *REQUIRED_FIELDS,
        *_OPTIONAL_FIELDS,
        "task_name",
        "flops",
        "passes",
        "baseline_costs",
        "error",
        "threads",
        TIMED_ON,
    }
)


class RecordError(ValueError):
    """A JSON object that is no tuning record; the message says why."""


def config_key(config: Config) -> str:
    """The canonical string of a config: what identifies it in a space (every space's `key`)
    and among the measured ones."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Workload:
    """What a record measured: a task's workload key (autotune/task.py), its readable name and
    its FLOPs per call."""

    key: str
    name: str = ""
    flops: float = 0.0


@dataclass(frozen=True)
class TuningRecord:
    """One measurement of one config (see the module's docstring for the JSON fields).

    `compiler_version`, `target` and `timestamp` None: not set yet (Database.append fills them
    in); `device`, `preset`, `l2_policy`, `timed_on` None: absent (a CPU target's, a local
    tune's)."""

    workload: Workload
    space_hash: str
    config: Config
    passes: list[str]
    costs: list[float]
    error_kind: str | None = None
    error: str = ""
    baseline_costs: list[float] = field(default_factory=list)
    threads: int = 1
    compiler_version: str | None = None
    target: dict[str, str] | None = None
    timestamp: float | None = None
    device: dict[str, Any] | None = None
    preset: str | None = None
    l2_policy: str | None = None
    timed_on: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        workload: Workload,
        space_hash: str,
        config: Config,
        passes: Sequence[str],
        costs: Sequence[float],
        error_kind: str | None = None,
        error: str = "",
        *,
        baseline_costs: Sequence[float] = (),
        threads: int = 1,
        target: Mapping[str, str] | None = None,
        compiler_version: str | None = None,
    ) -> TuningRecord:
        """A record of a measurement made now."""
        return cls(
            workload,
            space_hash,
            config,
            list(passes),
            list(costs),
            error_kind,
            error,
            baseline_costs=list(baseline_costs),
            threads=threads,
            compiler_version=compiler_version,
            target=None if target is None else dict(target),
            timestamp=time.time(),
        )

    @property
    def ok(self) -> bool:
        """Whether the measurement succeeded (and so has costs)."""
        return self.error_kind is None and bool(self.costs)

    @property
    def cost(self) -> float:
        """Best seconds per call; inf for a failed measurement."""
        return float(min(self.costs)) if self.ok else math.inf

    @property
    def paired(self) -> bool:
        """Whether it succeeded with the default schedule timed beside it."""
        return self.ok and bool(self.baseline_costs)

    @property
    def config_key(self) -> str:
        return config_key(self.config)

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object a database line holds."""
        out = dict(self.extra)
        out.update(
            workload_key=self.workload.key,
            task_name=self.workload.name,
            flops=self.workload.flops,
            space_hash=self.space_hash,
            config=self.config,
            passes=list(self.passes),
            costs=list(self.costs),
            error_kind=self.error_kind,
            error=self.error,
            threads=self.threads,
        )
        if self.baseline_costs:
            out["baseline_costs"] = list(self.baseline_costs)
        for name in (*_OPTIONAL_FIELDS, TIMED_ON):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, obj: Any) -> TuningRecord:
        """The record a database line's object holds; RecordError saying why it is none."""
        why = validate_record(obj)
        if why is not None:
            raise RecordError(why)
        return cls(
            Workload(obj["workload_key"], obj.get("task_name", ""), obj.get("flops", 0.0)),
            obj["space_hash"],
            obj["config"],
            list(obj.get("passes", [])),
            list(obj["costs"]),
            obj["error_kind"],
            obj.get("error", ""),
            baseline_costs=list(obj.get("baseline_costs", [])),
            threads=obj.get("threads", 1),
            compiler_version=obj["compiler_version"],
            target=obj.get("target"),
            timestamp=obj.get("timestamp"),
            device=obj.get("device"),
            preset=obj.get("preset"),
            l2_policy=obj.get("l2_policy"),
            timed_on=obj.get(TIMED_ON),
            extra={k: v for k, v in obj.items() if k not in _FIELDS},
        )


def _positive_costs(name: str, costs: Any) -> str | None:
    """Why `costs` is not a list of seconds (finite positive numbers), or None."""
    if not isinstance(costs, list):
        return f"{name} is {_kind(costs)}, not a list"
    if not all(_is_number(c) for c in costs):
        return f"{name} contain a value that is not a number"
    if not all(math.isfinite(c) for c in costs):
        return f"{name} contain a non-finite value"
    if any(c <= 0 for c in costs):
        return f"{name} contain a value <= 0"
    return None


def _kind(value: Any) -> str:
    """A JSON value's type in words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _config_problem(config: Any) -> str | None:
    """Why `config` is not a config of any search space (autotune/space.py), or None.

    Types and the shape common to every space only: whether it is in a given space is
    SearchSpace.contains's question, which these checks keep from failing on bad types."""
    if not isinstance(config, dict):
        return f"config is {_kind(config)}, not an object"
    for name, value in config.items():
        if name in INT_KNOBS:
            if not _is_int(value):
                return f"config.{name} is {_kind(value)}, not an integer"
        elif name in LIST_KNOBS or isinstance(value, list):
            if not isinstance(value, list) or not all(_is_int(v) for v in value):
                return f"config.{name} is not a list of integers"
        elif not _is_int(value):
            return f"config.{name} is {_kind(value)}, not an integer or a list of integers"
    per_loop = [k for k in ("reg", "tile", "order") if k in config]
    if len({len(config[k]) for k in per_loop}) > 1:
        return f"config.{', config.'.join(per_loop)} differ in length (one entry per loop)"
    if "order" in config and sorted(config["order"]) != list(range(len(config["order"]))):
        return "config.order is not a permutation of the loops"
    loops = len(config[per_loop[0]]) if per_loop else None
    if loops is not None and "vector" in config and not -1 <= config["vector"] < loops:
        return "config.vector is not one of the loops (or -1)"
    if any(v < 0 for k in ("reg", "tile", "pack") for v in config.get(k, [])):
        return "config has a negative tile size or operand"
    if config.get("unroll", 1) < 1 or config.get("parallel", 0) < 0:
        return "config.unroll is below 1 or config.parallel below 0"
    return None


def validate_record(record: Any) -> str | None:
    """Why `record` cannot be used (in words, for a warning), or None if it can.

    Loading skips such records, so that none can be applied as the fastest (a cost of 0 or
    -1), break the tuner's resume (a config that is not a dict) or reach a comparison with
    another type."""
    if not isinstance(record, dict):
        return f"the line is {_kind(record)}, not a JSON object"
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        return f"lacks {', '.join(missing)}"
    for name in ("workload_key", "compiler_version", "space_hash"):
        if not isinstance(record[name], str):
            return f"{name} is {_kind(record[name])}, not a string"
    for name in ("task_name", "error"):
        if name in record and not isinstance(record[name], str):
            return f"{name} is {_kind(record[name])}, not a string"
    problem = _config_problem(record["config"])
    if problem:
        return problem
    passes = record.get("passes", [])
    if not isinstance(passes, list) or not all(isinstance(p, str) for p in passes):
        return "passes is not a list of strings"
    error_kind = record["error_kind"]
    if error_kind is not None and not isinstance(error_kind, str):
        return f"error_kind is {_kind(error_kind)}, not a string or null"
    costs = record["costs"]
    problem = _positive_costs("costs", costs) or _positive_costs(
        "baseline_costs", record.get("baseline_costs", [])
    )
    if problem:
        return problem
    if error_kind is None and not costs:
        return "costs are empty for a successful measurement"
    threads = record.get("threads", 1)
    if not _is_int(threads) or threads < 1:
        return "threads is not a positive integer"
    for name in ("flops", "timestamp"):
        value = record.get(name, 0.0)
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            return f"{name} is not a finite non-negative number"
    if "target" in record and not isinstance(record["target"], dict):
        return f"target is {_kind(record['target'])}, not an object"
    if "device" in record and not isinstance(record["device"], dict | None):
        return f"device is {_kind(record['device'])}, not an object"
    for name in ("preset", "l2_policy", TIMED_ON):
        if record.get(name) is not None and not isinstance(record[name], str):
            return f"{name} is {_kind(record[name])}, not a string"
    return None


__all__ = [
    "REQUIRED_FIELDS",
    "TIMED_ON",
    "TUNER",
    "WORKERS",
    "Config",
    "RecordError",
    "TuningRecord",
    "Workload",
    "config_key",
    "validate_record",
]
