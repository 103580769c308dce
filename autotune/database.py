"""Tuning records: one JSON object per line, appended and fsync-ed as each measurement is made.

A record from another compiler version or another search-space definition (space hash) is never
applied: it is skipped, with one warning per database. A line torn by a crash mid-append (the last
line, without its newline) is ignored with a warning and cut off before the next append, so a
tuning run killed at any point resumes with every complete record exactly once. No pickle.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

Record = dict[str, Any]

REQUIRED_FIELDS = (
    "workload_key",
    "compiler_version",
    "space_hash",
    "config",
    "costs",
    "error_kind",
)
_HOST_TARGET: dict[str, str] = {}


def host_target() -> dict[str, str]:
    """This machine's target entry ({cpu, features}), as measure.host_target gives it."""
    if not _HOST_TARGET:
        from autotune.measure import host_target as measured_on

        _HOST_TARGET.update(measured_on())
    return dict(_HOST_TARGET)


def compiler_version() -> str:
    """The installed ziggurat version (records from another one are ignored)."""
    try:
        return metadata.version("ziggurat")
    except metadata.PackageNotFoundError:
        return "unknown"


def config_key(config: Any) -> str:
    """Canonical string of a config (the same as space.SearchSpace.key)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def record_cost(record: Record) -> float:
    """Best seconds per call of a record; inf for a failed measurement."""
    costs = record.get("costs") or []
    if record.get("error_kind") is not None or not costs:
        return math.inf
    return float(min(costs))


def make_record(
    *,
    workload_key: str,
    task_name: str,
    target: dict[str, str],
    space_hash: str,
    config: Any,
    passes: list[str],
    costs: list[float],
    error_kind: str | None,
    error: str = "",
    flops: float = 0.0,
) -> Record:
    """A record with this compiler's version and the current time."""
    return {
        "workload_key": workload_key,
        "task_name": task_name,
        "target": dict(target),
        "compiler_version": compiler_version(),
        "space_hash": space_hash,
        "config": config,
        "passes": list(passes),
        "costs": [float(c) for c in costs],
        "error_kind": error_kind,
        "error": error,
        "flops": float(flops),
        "timestamp": time.time(),
    }


class Database:
    """JSON-lines records at `path` (created on the first append).

    `space_hashes` maps a workload key to its current space hash; records of that workload with
    another hash are ignored (the methods also take `space_hash=` for one query). Workloads not
    in the map are checked for the compiler version only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        space_hashes: dict[str, str] | None = None,
        version: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.version = compiler_version() if version is None else version
        self.space_hashes: dict[str, str] = dict(space_hashes or {})
        self._records: list[Record] = []  # current-version records, in file order
        self._warned_stale = False
        self._stale = 0
        self._load()

    # ------------------------------------------------------------------ reading

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        torn = lines.pop()  # b"" when the file ends with a newline
        if torn.strip():
            warnings.warn(
                f"{self.path}: ignoring an incomplete last line ({len(torn)} bytes; "
                "a crash during an append?)",
                stacklevel=3,
            )
            # cut it off so that the next append starts on a line of its own
            with open(self.path, "r+b") as f:
                f.truncate(len(data) - len(torn))
                f.flush()
                os.fsync(f.fileno())
        bad = 0
        for raw in lines:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if not isinstance(record, dict) or any(k not in record for k in REQUIRED_FIELDS):
                bad += 1
                continue
            self._keep(record)
        if bad:
            warnings.warn(f"{self.path}: ignoring {bad} malformed line(s)", stacklevel=3)

    def _keep(self, record: Record) -> None:
        if record["compiler_version"] != self.version:
            self._stale += 1
            return
        self._records.append(record)

    def records(
        self, workload_key: str | None = None, space_hash: str | None = None, threads: int | None = None
    ) -> list[Record]:
        """Usable records (of one workload, if given), in the order they were appended.

        With `threads`, only records tuned for that many threads (a record without the field was
        tuned for one); records for other thread counts are valid, just not asked for: no warning.
        """
        out, stale_space = [], 0
        for r in self._records:
            if workload_key is not None and r["workload_key"] != workload_key:
                continue
            if threads is not None and r.get("threads", 1) != threads:
                continue
            want = (
                space_hash if space_hash is not None else self.space_hashes.get(r["workload_key"])
            )
            if want is not None and r["space_hash"] != want:
                stale_space += 1
                continue
            out.append(r)
        if (self._stale or stale_space) and not self._warned_stale:
            self._warned_stale = True
            warnings.warn(
                f"{self.path}: ignoring {self._stale} record(s) from another compiler version "
                f"(this is {self.version}) and {stale_space} from another search-space definition "
                "(space hash); they are not applied",
                stacklevel=2,
            )
        return out

    def best(self, workload_key: str, space_hash: str | None = None, threads: int | None = None) -> Record | None:
        """The fastest successful record of a workload (lowest min cost), or None."""
        ok = self.ranked(workload_key, space_hash, threads)
        return ok[0] if ok else None

    def ranked(self, workload_key: str, space_hash: str | None = None, threads: int | None = None) -> list[Record]:
        """The successful records of a workload, fastest first."""
        ok = [r for r in self.records(workload_key, space_hash, threads) if math.isfinite(record_cost(r))]
        return sorted(ok, key=record_cost)

    def measured_keys(self, workload_key: str, space_hash: str | None = None) -> set[str]:
        """Config keys already measured for a workload, failures included (never measure twice)."""
        return {config_key(r["config"]) for r in self.records(workload_key, space_hash)}

    def workloads(self) -> set[str]:
        return {r["workload_key"] for r in self.records()}

    def __len__(self) -> int:
        return len(self.records())

    # ------------------------------------------------------------------ writing

    def append(self, record: Record) -> None:
        """Write one record as one line, then fsync: it survives a SIGKILL right after.

        Missing `compiler_version`, `target` (this host) and `timestamp` are filled in."""
        record = dict(record)
        record.setdefault("compiler_version", self.version)
        if "target" not in record:
            record["target"] = host_target()
        record.setdefault("timestamp", time.time())
        missing = [k for k in REQUIRED_FIELDS if k not in record]
        if missing:
            raise ValueError(f"record lacks {', '.join(missing)}")
        line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(line)
            while view:  # one write() in practice; loop for the rare short write
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._keep(json.loads(line))

    def extend(self, records: Iterable[Record]) -> None:
        for r in records:
            self.append(r)
