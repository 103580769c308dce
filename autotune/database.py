"""Tuning records: one JSON object per line, appended and fsync-ed as each measurement is made.

Concurrency and crashes. Several tuning processes may append to one database while others read
it. A writer holds an exclusive `flock` on the file for the whole append (repair, write, fsync);
a reader holds a shared one while it reads, so it never sees half a record. Loading never writes:
a last line without its newline is kept if it is a complete record, else ignored with a warning
(a writer killed mid-append left it), and the file is left as it is, so a read-only database
loads. The next writer repairs such a tail under its lock, from the file as it is then: it ends
a complete record with the newline it lacked, or cuts a torn one back to the last newline. An
append that fails (disk full, read-only file system) cuts its partial line off again and raises
`DatabaseError`. Where the file system has no locks, reading and appending go on without them.

Validation. A record of the wrong shape (config not an object of knobs, costs not finite
positive numbers, ...; see `validate_record`) is skipped, with one warning per database naming
its line and why; it is never applied nor counted as measured. A record from another compiler
version or another search-space definition (space hash) is never applied either: skipped, with
one warning per database. A tuning run killed at any point resumes with every complete record
exactly once. No pickle.
"""

from __future__ import annotations

import functools
import json
import math
import os
import stat
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from compiler.backends.llvm_cpu.jit import host_target as measured_on
from compiler.errors import ZigguratError

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: no locking
    fcntl = None  # type: ignore[assignment]

Record = dict[str, Any]

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
MAX_REASONS_SHOWN = 10
_READ_CHUNK = 1 << 16
_HOST_TARGET: dict[str, str] = {}


class DatabaseError(ZigguratError):
    """The database file cannot be read or written (a directory, no permission, disk full)."""


def host_target() -> dict[str, str]:
    """This machine's target entry ({cpu, features}), as measure.host_target gives it."""
    if not _HOST_TARGET:
        _HOST_TARGET.update(measured_on())
    return dict(_HOST_TARGET)


@functools.cache
def compiler_version() -> str:
    """The installed ziggurat version (records from another one are ignored); cached, as the
    metadata lookup scans sys.path and a process opens many databases."""
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


def comparable_costs(records: list[Record]) -> list[float]:
    """Each record's cost (record_cost), comparable across the records of a workload measured
    while the host ran at different speeds (a shared VM's second vCPU comes and goes).

    A paired record (with `baseline_costs`: its default schedule timed alternately with it) costs
    min(costs) / min(baseline_costs) times the least baseline cost among the paired records of
    its workload and thread count: its time had the host been as fast as it was at best. A
    record without baseline costs keeps its own cost."""
    least: dict[tuple[str, int], float] = {}
    for r in records:
        base = r.get("baseline_costs") or []
        if base and math.isfinite(record_cost(r)):
            group = (r["workload_key"], r.get("threads", 1))
            least[group] = min(least.get(group, math.inf), min(base))
    out = []
    for r in records:
        cost, base = record_cost(r), r.get("baseline_costs") or []
        if base and math.isfinite(cost):
            cost = cost / min(base) * least[(r["workload_key"], r.get("threads", 1))]
        out.append(cost)
    return out


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
    return None


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


def _strerror(e: OSError) -> str:
    return e.strerror or str(e)


@contextmanager
def _locked(fd: int, exclusive: bool) -> Iterator[None]:
    """Hold a flock on `fd` (works on read-only descriptors); without lock support, go on
    unlocked: reading a file beats refusing to."""
    locked = False
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            locked = True
        except OSError:
            pass
    try:
        yield
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _is_complete_object(line: bytes) -> bool:
    """Whether a line parses as one JSON object (a torn record never does: it lacks its `}`)."""
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


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

    def _read(self) -> bytes:
        """The file's bytes, read under a shared lock (b"" if there is no file yet)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return b""
        except OSError as e:
            raise DatabaseError(
                f"cannot read the tuning database {self.path}: {_strerror(e)}"
            ) from None
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                raise DatabaseError(
                    f"tuning database {self.path} is a directory, not a JSON-lines file"
                )
            chunks = []
            with _locked(fd, exclusive=False):
                while chunk := os.read(fd, _READ_CHUNK):
                    chunks.append(chunk)
            return b"".join(chunks)
        except OSError as e:
            raise DatabaseError(
                f"cannot read the tuning database {self.path}: {_strerror(e)}"
            ) from None
        finally:
            os.close(fd)

    def _load(self) -> None:
        lines = self._read().split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        if tail.strip():
            if _is_complete_object(tail):
                lines.append(tail)  # a complete record that only lacks its newline: keep it
            else:
                warnings.warn(
                    f"{self.path}: ignoring an incomplete last line ({len(tail)} bytes, line "
                    f"{len(lines) + 1}; a crash during an append?)",
                    stacklevel=3,
                )
        reasons: list[str] = []
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):
                reasons.append(f"line {number}: not JSON")
                continue
            why = validate_record(record)
            if why is not None:
                reasons.append(f"line {number}: {why}")
                continue
            self._keep(record)
        if reasons:
            shown = "; ".join(reasons[:MAX_REASONS_SHOWN])
            more = (
                f"; and {len(reasons) - MAX_REASONS_SHOWN} more"
                if len(reasons) > MAX_REASONS_SHOWN
                else ""
            )
            warnings.warn(
                f"{self.path}: skipping {len(reasons)} malformed record(s): {shown}{more}",
                stacklevel=3,
            )

    def _keep(self, record: Record) -> None:
        if record["compiler_version"] != self.version:
            self._stale += 1
            return
        self._records.append(record)

    def records(
        self,
        workload_key: str | None = None,
        space_hash: str | None = None,
        threads: int | None = None,
        preset: str | None = None,
    ) -> list[Record]:
        """Usable records (of one workload, if given), in the order they were appended.

        With `threads`, only records tuned for that many threads (a record without the field was
        tuned for one); records for other thread counts are valid, just not asked for: no warning.
        With `space_hash`, only records of that space; those of another target are skipped
        silently too: a GPU preset's (`preset`) or, with preset None, the CPU's (no preset).
        """
        out, stale_space = [], 0
        for r in self._records:
            if workload_key is not None and r["workload_key"] != workload_key:
                continue
            if threads is not None and r.get("threads", 1) != threads:
                continue
            if space_hash is not None and r.get("preset") != preset:
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

    def best(
        self,
        workload_key: str,
        space_hash: str | None = None,
        threads: int | None = None,
        preset: str | None = None,
    ) -> Record | None:
        """The fastest successful record of a workload (lowest comparable cost), or None."""
        ok = self.ranked(workload_key, space_hash, threads, preset)
        return ok[0] if ok else None

    def ranked(
        self,
        workload_key: str,
        space_hash: str | None = None,
        threads: int | None = None,
        preset: str | None = None,
    ) -> list[Record]:
        """The successful records of a workload, fastest first (by `comparable_costs`)."""
        found = self.records(workload_key, space_hash, threads, preset)
        ok = [(c, i) for i, c in enumerate(comparable_costs(found)) if math.isfinite(c)]
        return [found[i] for _, i in sorted(ok)]

    def measured_keys(self, workload_key: str, space_hash: str | None = None) -> set[str]:
        """Config keys already measured for a workload, failures included (never measure twice)."""
        return {config_key(r["config"]) for r in self.records(workload_key, space_hash)}

    def workloads(self) -> set[str]:
        return {r["workload_key"] for r in self.records()}

    def __len__(self) -> int:
        return len(self.records())

    # ------------------------------------------------------------------ writing

    def _open_for_append(self) -> int:
        """A read-write, append-only descriptor (reading lets the writer repair a torn tail)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(
                self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644
            )
        except IsADirectoryError:
            raise DatabaseError(
                f"tuning database {self.path} is a directory, not a JSON-lines file"
            ) from None
        except OSError as e:
            raise DatabaseError(
                f"cannot write to the tuning database {self.path}: {_strerror(e)}"
            ) from None

    def check_writable(self) -> None:
        """Raise DatabaseError now if appending will fail to open the file (before a tuning run
        spends its first batch of measurements); creates an empty database if there is none."""
        os.close(self._open_for_append())

    def _repair_tail(self, fd: int) -> None:
        """Under the writer's lock: end a last line that lacks its newline, as read now.

        A complete record gets its newline; a torn one (a writer killed mid-append) is cut back
        to the last newline, so that the next record starts on a line of its own."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        start, tail = size, b""
        while start > 0:  # back to the last newline
            step = min(_READ_CHUNK, start)
            chunk = os.pread(fd, step, start - step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                tail = chunk[cut + 1 :] + tail
                start -= step - cut - 1
                break
            tail, start = chunk + tail, start - step
        if _is_complete_object(tail):
            self._write_all(fd, b"\n")
        else:
            os.ftruncate(fd, start)
            warnings.warn(
                f"{self.path}: cut off an incomplete last line ({len(tail)} bytes; "
                "a crash during an append?)",
                stacklevel=4,
            )

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:  # one write() in practice; loop for the rare short write
            view = view[os.write(fd, view) :]

    def _append_line(self, line: bytes) -> None:
        """Append one line under an exclusive lock, then fsync: all of it or (as far as the
        file system lets us) none of it."""
        fd = self._open_for_append()
        try:
            with _locked(fd, exclusive=True):
                size = -1
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        self._repair_tail(fd)
                        size = os.fstat(fd).st_size
                    self._write_all(fd, line)
                    os.fsync(fd)
                except OSError as e:
                    if size >= 0:  # no partial line may be left to glue onto the next record
                        try:
                            os.ftruncate(fd, size)
                        except OSError:
                            pass
                    raise DatabaseError(
                        f"cannot write to the tuning database {self.path}: {_strerror(e)}"
                    ) from None
        finally:
            os.close(fd)

    def append(self, record: Record) -> None:
        """Write one record as one line, then fsync: it survives a SIGKILL right after.

        Missing `compiler_version`, `target` (this host) and `timestamp` are filled in. A record
        that readers would skip (validate_record) is refused with ValueError."""
        record = dict(record)
        record.setdefault("compiler_version", self.version)
        if "target" not in record:
            record["target"] = host_target()
        record.setdefault("timestamp", time.time())
        try:
            text = json.dumps(record, sort_keys=True, allow_nan=False)
        except ValueError as e:
            raise ValueError(f"record cannot be written: {e}") from None
        written = json.loads(text)
        why = validate_record(written)
        if why is not None:
            raise ValueError(f"record cannot be written: {why}")
        self._append_line((text + "\n").encode())
        self._keep(written)

    def extend(self, records: Iterable[Record]) -> None:
        for r in records:
            self.append(r)


__all__ = [
    "Database",
    "DatabaseError",
    "compiler_version",
    "config_key",
    "make_record",
    "record_cost",
    "comparable_costs",
    "validate_record",
]
