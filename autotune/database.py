"""Tuning records: one JSON object per line, appended and fsync-ed as each measurement is made.

Concurrency and crashes. Several tuning processes may append to one database while others read
it. A writer holds an exclusive `flock` on the file for the whole append (repair, write, fsync)
and writes each record as one whole line. A reader takes no lock and never waits: it reads the
file as it is and keeps its complete lines only; a last line without its newline is kept
if it is a complete record, else dropped. So anyone who can read the file (and so can lock it)
cannot stall `run --db`, `compile --db` or `bench --db`. Such an incomplete last line is an
append in progress when a writer holds the lock (probed, never waited for) or the file changed
while it was read: dropped silently; else a writer killed mid-append left it: ignored with a
warning. A malformed line read while the file changed (a writer cutting a torn tail as it was
read) is read again, a few times. Loading never writes, so a read-only database loads. The next
writer repairs a torn tail under its lock, from the file as it is then: it ends a complete record
with the newline it lacked, or cuts a torn one back to the last newline. An append that fails
(disk full, read-only file system) cuts its partial line off again and raises `DatabaseError`.
A writer waits for the lock at most `lock_timeout` seconds (default: $ZIGGURAT_DB_LOCK_TIMEOUT,
else 30), saying once on stderr whom it waits for (the holder's pid, from /proc/locks), then
raises `DatabaseError` naming the file and the holder. Where the file system has no locks,
appending goes on without them.

Paths. The database is a regular file (or a link to one), or none yet: a directory, FIFO,
device or socket is refused with `DatabaseError`, checked on the opened descriptor (opened
non-blocking, so that a FIFO cannot stall the open).

Validation. Each line becomes a typed `TuningRecord` here and nowhere else
(`TuningRecord.from_json`, autotune/record.py). A record of the wrong shape (config not an
object of knobs, costs not finite positive numbers, ...; see `validate_record`) is skipped, with one warning per database naming
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
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from autotune.record import RecordError, TuningRecord, config_key, validate_record
from compiler.backends.llvm_cpu.jit import host_target as measured_on
from compiler.errors import ZigguratError

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: no locking
    fcntl = None  # type: ignore[assignment]

MAX_REASONS_SHOWN = 10
LOCK_TIMEOUT_ENV = "ZIGGURAT_DB_LOCK_TIMEOUT"
"""Seconds a writer waits for the database's lock (default DEFAULT_LOCK_TIMEOUT)."""
DEFAULT_LOCK_TIMEOUT = 30.0
_READ_CHUNK = 1 << 16
_READS = 3
"""Reads of a file that changed while it was read and showed a malformed line, at most."""
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


def record_cost(record: TuningRecord) -> float:
    """Best seconds per call of a record; inf for a failed measurement."""
    return record.cost


def comparable_costs(records: list[TuningRecord]) -> list[float]:
    """Each record's cost (record_cost), comparable across the records of a workload measured
    while the host ran at different speeds (a shared VM's second vCPU comes and goes).

    A paired record (with `baseline_costs`: its default schedule timed alternately with it) costs
    min(costs) / min(baseline_costs) times the least baseline cost among the paired records of
    its workload and thread count: its time had the host been as fast as it was at best. A
    record without baseline costs keeps its own cost."""
    least: dict[tuple[str, int], float] = {}
    for r in records:
        if r.paired:
            group = (r.workload.key, r.threads)
            least[group] = min(least.get(group, math.inf), min(r.baseline_costs))
    out = []
    for r in records:
        cost = r.cost
        if r.paired:
            cost = cost / min(r.baseline_costs) * least[(r.workload.key, r.threads)]
        out.append(cost)
    return out


def _strerror(e: OSError) -> str:
    return e.strerror or str(e)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: Path, mode: int) -> DatabaseError:
    """The error for a database path that names no regular file (a link to one is one)."""
    if stat.S_ISDIR(mode):
        return DatabaseError(f"tuning database {path} is a directory, not a JSON-lines file")
    kind = next((k for is_kind, k in _KINDS if is_kind(mode)), "something else")
    return DatabaseError(f"tuning database {path} is {kind}, not a regular file")


def _open_regular(path: Path, flags: int, failing: str) -> int:
    """`path` opened with `flags`, if it is a regular file; else DatabaseError naming it and what
    it is. Opened non-blocking, so that a FIFO cannot stall the open, and checked on the
    descriptor (no race with a rename). FileNotFoundError passes through; another failure is
    DatabaseError("{failing} the tuning database {path}: {why}")."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileNotFoundError:
        raise
    except OSError as e:  # a socket (ENXIO), a directory opened for writing (EISDIR), ...
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode) from None
        raise DatabaseError(f"{failing} the tuning database {path}: {_strerror(e)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        os.set_blocking(fd, True)
    except OSError as e:
        os.close(fd)
        raise DatabaseError(f"{failing} the tuning database {path}: {_strerror(e)}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _signature(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is appended to or cut (to see whether it changed during a read)."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _write_locked(fd: int) -> bool:
    """Whether some descriptor holds an exclusive flock on the file (a writer mid-append, most
    likely): probed with LOCK_NB, never waited for."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no locks on this file system
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass
    return False


def _has_open(pid: int, st: os.stat_result) -> bool:
    """Whether process `pid` has the file `st` open (False where /proc does not tell us)."""
    fds = f"/proc/{pid}/fd"
    try:
        for name in os.listdir(fds):
            try:
                other = os.stat(f"{fds}/{name}")
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return True
    except OSError:
        pass
    return False


def _lock_holders(fd: int) -> list[int]:
    """The pids holding a flock on `fd`'s file, from /proc/locks (Linux); [] where it does not
    say (no /proc, a holder in another pid namespace: pid 0). /proc/locks names the file by
    device and inode; where the device differs from fstat's (btrfs subvolumes, overlayfs), a
    lock on the same inode number counts if its process has this file open."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    pids: list[int] = []
    for line in lines:
        # "3: FLOCK  ADVISORY  WRITE 6887 fe:00:2146739 0 EOF"; a waiter's has "->" before FLOCK
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or not fields[4].isdigit():
            continue
        pid = int(fields[4])
        dev, _, inode = fields[5].rpartition(":")
        if pid <= 0 or pid in pids or inode != str(st.st_ino):
            continue
        if dev == device or _has_open(pid, st):
            pids.append(pid)
    return pids


def _holder(fd: int) -> str:
    """Who holds the lock on `fd`'s file, in words."""
    pids = _lock_holders(fd)
    if not pids:
        return "another process"
    mine = " (this process)" if pids == [os.getpid()] else ""
    return f"pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}{mine}"


def _env_lock_timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value >= 0:  # NaN too
        raise DatabaseError(
            f"environment variable {LOCK_TIMEOUT_ENV}={raw!r} is not a number of seconds (0 or "
            "more): how long to wait for the tuning database's lock"
        )
    return value


def _incomplete_tail(data: bytes) -> bool:
    """Whether the text after the last newline is not a complete record (a torn line)."""
    tail = data[data.rfind(b"\n") + 1 :]
    return bool(tail.strip()) and not _is_complete_object(tail)


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
    in the map are checked for the compiler version only. `lock_timeout`: the most seconds an
    append waits for another writer's lock (None: $ZIGGURAT_DB_LOCK_TIMEOUT, else 30); loading
    never waits for one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        space_hashes: dict[str, str] | None = None,
        version: str | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        if lock_timeout is not None and not lock_timeout >= 0:
            raise ValueError(f"lock_timeout must be 0 or more seconds, not {lock_timeout}")
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.version = compiler_version() if version is None else version
        self.space_hashes: dict[str, str] = dict(space_hashes or {})
        self._records: list[TuningRecord] = []  # current-version records, in file order
        self._warned_stale = False
        self._stale = 0
        self._load()

    # ------------------------------------------------------------------ reading

    def _read(self) -> tuple[bytes, bool]:
        """The file's bytes, read once and without any lock (b"" if there is no file yet), and
        whether a writer may have been at work meanwhile: the file changed while it was read, or
        (asked only when the last line is incomplete) a writer holds its lock now."""
        try:
            fd = _open_regular(self.path, os.O_RDONLY, "cannot read")
        except FileNotFoundError:
            return b"", False
        try:
            before = _signature(os.fstat(fd))
            chunks = []
            while chunk := os.read(fd, _READ_CHUNK):
                chunks.append(chunk)
            data = b"".join(chunks)
            busy = _signature(os.fstat(fd)) != before
            if not busy and _incomplete_tail(data):
                # A writer preempted mid-append for the whole read, which then finished and
                # unlocked before the probe, leaves the probe unlocked and our read torn: the
                # file has grown since, so look again after the probe.
                busy = _write_locked(fd) or _signature(os.fstat(fd)) != before
            return data, busy
        except OSError as e:
            raise DatabaseError(
                f"cannot read the tuning database {self.path}: {_strerror(e)}"
            ) from None
        finally:
            os.close(fd)

    def _load(self) -> None:
        for attempt in range(1, _READS + 1):
            data, busy = self._read()
            records, reasons, torn = self._parse(data)
            if not (reasons and busy) or attempt == _READS:
                break
            time.sleep(0.01 * attempt)  # a writer was cutting a torn tail as we read: again
        if torn is not None and not busy:  # busy: an append in progress, not a crash
            warnings.warn(
                f"{self.path}: ignoring an incomplete last line ({torn[0]} bytes, line "
                f"{torn[1]}; a crash during an append?)",
                stacklevel=3,
            )
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
        for record in records:
            self._keep(record)

    @staticmethod
    def _parse(data: bytes) -> tuple[list[TuningRecord], list[str], tuple[int, int] | None]:
        """The valid records of a file's bytes, why each other line is not one, and the size
        and line number of an incomplete last line (None if there is none)."""
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        torn = None
        if tail.strip():
            if _is_complete_object(tail):
                lines.append(tail)  # a complete record that only lacks its newline: keep it
            else:
                torn = (len(tail), len(lines) + 1)
        records: list[TuningRecord] = []
        reasons: list[str] = []
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                reasons.append(f"line {number}: not JSON")
                continue
            try:
                records.append(TuningRecord.from_json(obj))
            except RecordError as e:
                reasons.append(f"line {number}: {e}")
        return records, reasons, torn

    def _keep(self, record: TuningRecord) -> None:
        if record.compiler_version != self.version:
            self._stale += 1
            return
        self._records.append(record)

    def records(
        self,
        workload_key: str | None = None,
        space_hash: str | None = None,
        threads: int | None = None,
        preset: str | None = None,
    ) -> list[TuningRecord]:
        """Usable records (of one workload, if given), in the order they were appended.

        With `threads`, only records tuned for that many threads (a record without the field was
        tuned for one); records for other thread counts are valid, just not asked for: no warning.
        With `space_hash`, only records of that space; those of another target are skipped
        silently too: a GPU preset's (`preset`) or, with preset None, the CPU's (no preset).
        """
        out, stale_space = [], 0
        for r in self._records:
            if workload_key is not None and r.workload.key != workload_key:
                continue
            if threads is not None and r.threads != threads:
                continue
            if space_hash is not None and r.preset != preset:
                continue
            want = space_hash if space_hash is not None else self.space_hashes.get(r.workload.key)
            if want is not None and r.space_hash != want:
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
    ) -> TuningRecord | None:
        """The fastest successful record of a workload (lowest comparable cost), or None."""
        ok = self.ranked(workload_key, space_hash, threads, preset)
        return ok[0] if ok else None

    def ranked(
        self,
        workload_key: str,
        space_hash: str | None = None,
        threads: int | None = None,
        preset: str | None = None,
    ) -> list[TuningRecord]:
        """The successful records of a workload, fastest first (by `comparable_costs`)."""
        found = self.records(workload_key, space_hash, threads, preset)
        ok = [(c, i) for i, c in enumerate(comparable_costs(found)) if math.isfinite(c)]
        return [found[i] for _, i in sorted(ok)]

    def measured_keys(self, workload_key: str, space_hash: str | None = None) -> set[str]:
        """Config keys already measured for a workload, failures included (never measure twice)."""
        return {r.config_key for r in self.records(workload_key, space_hash)}

    def workloads(self) -> set[str]:
        return {r.workload.key for r in self.records()}

    def __len__(self) -> int:
        return len(self.records())

    # ------------------------------------------------------------------ writing

    def _open_for_append(self) -> int:
        """A read-write, append-only descriptor (reading lets the writer repair a torn tail)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return _open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, "cannot write to")
        except OSError as e:  # mkdir's, or the open's FileNotFoundError (a dangling link)
            raise DatabaseError(
                f"cannot write to the tuning database {self.path}: {_strerror(e)}"
            ) from None

    @contextmanager
    def _write_lock(self, fd: int) -> Iterator[None]:
        """Hold the exclusive flock on `fd` (it works on read-only descriptors too, so a reader
        may hold it): wait for it at most the lock timeout, saying once on stderr whom for, then
        raise DatabaseError naming the file and the holder. Without lock support, go on
        unlocked."""
        locked = self._acquire(fd)
        try:
            yield
        finally:
            if locked:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _acquire(self, fd: int) -> bool:
        """Take the exclusive flock, polling with LOCK_NB until the lock timeout; False when
        there are no locks (nothing to release)."""
        if fcntl is None:
            return False
        timeout = self.lock_timeout if self.lock_timeout is not None else _env_lock_timeout()
        deadline = time.monotonic() + timeout
        delay, told = 0.005, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                pass
            except OSError:  # no locks on this file system
                return False
            now = time.monotonic()
            if now >= deadline:
                raise DatabaseError(
                    f"cannot write to the tuning database {self.path}: its lock is held by "
                    f"{_holder(fd)} (waited {timeout:g} s; {LOCK_TIMEOUT_ENV} sets how long)"
                )
            if not told:
                told = True
                print(
                    f"ziggurat: waiting for the lock on {self.path} held by {_holder(fd)} "
                    f"(up to {timeout:g} s)",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(min(delay, deadline - now))
            delay = min(2 * delay, 0.1)

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
            with self._write_lock(fd):
                size = -1
                try:
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

    def append(self, record: TuningRecord) -> None:
        """Write one record as one line, then fsync: it survives a SIGKILL right after.

        Missing (None) `compiler_version`, `target` (this host) and `timestamp` are filled in.
        A record that readers would skip (validate_record) is refused with ValueError."""
        obj = record.to_json()
        obj.setdefault("compiler_version", self.version)
        obj.setdefault("target", host_target())
        obj.setdefault("timestamp", time.time())
        try:
            text = json.dumps(obj, sort_keys=True, allow_nan=False)
        except ValueError as e:
            raise ValueError(f"record cannot be written: {e}") from None
        try:  # what readers will read: kept as they will see it
            written = TuningRecord.from_json(json.loads(text))
        except RecordError as e:
            raise ValueError(f"record cannot be written: {e}") from None
        self._append_line((text + "\n").encode())
        self._keep(written)

    def extend(self, records: Iterable[TuningRecord]) -> None:
        for r in records:
            self.append(r)


__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "LOCK_TIMEOUT_ENV",
    "Database",
    "DatabaseError",
    "compiler_version",
    "config_key",
    "record_cost",
    "comparable_costs",
    "validate_record",
]
