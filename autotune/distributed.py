"""Measure tuning candidates on other machines: a dask.distributed cluster runs `measure` there.

Whoever can connect to a dask scheduler runs code on its workers, and a process that unpickles
what a worker sends runs the worker's code. So a cluster is either on 127.0.0.1 only or speaks
TLS with certificates from a CA of your own (dask's TLS is mutual: the scheduler, each worker and
the tuner each present a certificate signed by that CA, and strangers cannot connect at all).

    # one machine: everything on 127.0.0.1
    dask scheduler --host 127.0.0.1 --dashboard-address 127.0.0.1:8787
    dask worker tcp://127.0.0.1:8786 --host 127.0.0.1 --dashboard-address 127.0.0.1:0 \
        --nworkers 1 --nthreads 1
    ziggurat tune model.onnx --trials 1000 --db tune.jsonl --dask tcp://127.0.0.1:8786

    # many machines: TLS (ca.pem signed scheduler.pem, worker.pem and client.pem; the README
    # shows the openssl commands). The HTTP dashboards stay on 127.0.0.1 (`--no-dashboard`
    # alone still serves on all interfaces).
    dask scheduler --host tls://SCHEDULER_IP --dashboard-address 127.0.0.1:8787 \
        --tls-ca-file ca.pem --tls-cert scheduler.pem --tls-key scheduler-key.pem
    # each measuring machine (same ziggurat version, `pip install 'ziggurat[tune]'`), one worker
    # with one thread (measurements must not share the cores)
    dask worker tls://SCHEDULER_IP:8786 --host WORKER_IP --dashboard-address 127.0.0.1:0 \
        --nworkers 1 --nthreads 1 \
        --tls-ca-file ca.pem --tls-cert worker.pem --tls-key worker-key.pem
    # the tuner (the cost model and the database stay here)
    ziggurat tune model.onnx --trials 1000 --db tune.jsonl --dask tls://SCHEDULER_IP:8786 \
        --dask-tls-ca ca.pem --dask-tls-cert client.pem --dask-tls-key client-key.pem

or from Python: `tune_task(..., measurer=DaskMeasurer("tls://...", security=tls_security(...)))`.
A plain tcp:// scheduler on another machine is refused unless `allow_insecure` (`--dask-insecure`).

A measurement is a function of (task, candidate passes, target) only, so a batch can be measured
anywhere that has the same ziggurat version: `DaskMeasurer` splits each batch into about one chunk
per worker, each chunk one dask task calling `autotune.measure.measure` on its worker (which builds
in parallel and reuses that worker process's runner and reference cache), and returns the results
in candidate order. Records then carry the workers' target (`.target`), not the tuner's machine's.

Workers are not trusted with this process: a chunk's reply is JSON text, fetched as msgpack (the
client's only deserializers are "msgpack" and "error"), and what dask relays from workers besides
(the result's pickled type, a failed task's exception, warning and print events) is never
unpickled. Each reply is checked: one result per candidate, the expected fields and types, finite
positive costs, a known error kind, the cluster's target; anything else becomes a failed result
naming why. A timing is the workers' word: one beyond the peak of their device
(autotune/measure/peak.py) is refused as `implausible_timing`, and a config whose timing would
make it the best so far is measured again here, for correctness and time, before it is recorded
(`remote = True` tells `tune_task` to): the best record is always timed on this machine (its
`timed_on` says so). The scheduler, which relays everything, is trusted: that is what TLS is for.

An address of this machine where nothing listens is refused at once (`probe_address`), not after
the connect timeout.

All workers must report the same target (LLVM CPU name and features; for a GPU tune, `measure_kwargs`
target="opencl" or "cuda", also the device: name, driver, compute capability or OpenCL version):
a tuning database holds the measurements of one target, so a mixed cluster is refused (run one
scheduler per kind of machine). A GPU tune's records carry the workers' device (`.device`).
A chunk whose dask task fails (an exception, a worker that died or left, no answer in time, a
reply that fails the checks) becomes a `runtime_error` result for each of its candidates, and
tuning goes on.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import ipaddress
import json
import math
import multiprocessing
import os
import pickletools
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from autotune.measure import (
    ERROR_KINDS,
    MeasureResult,
    cpu_peak_flops,
    device_info,
    gpu_peak_flops,
    host_target,
    implausible,
    measure,
)
from autotune.tuning_target import CPU, GPU_APIS
from compiler.errors import ZigguratError

INSTALL_HINT = "pip install 'ziggurat[tune]'"
_CHUNK_LOCK = threading.Lock()  # per worker process: measure's runner and caches are not threadsafe
SAFE_DESERIALIZERS = ["msgpack", "error"]  # plain data, or dask's "could not serialize" message
_RESULT_FIELDS = ("costs", "error_kind", "error", "build_s", "run_s")
_OPTIONAL_RESULT_FIELDS = ("baseline_costs",)  # a paired measurement's (MeasureResult)
_MAX_TEXT = 2000  # characters of worker-written text kept (errors, names)
_MAX_COSTS = 10_000


@contextlib.contextmanager
def _no_collection() -> Any:
    """Collect garbage now, then none while a Client starts: an earlier Client that failed to
    connect is freed by the collector, and its __del__ closes dask's shared event-loop runner,
    which deadlocks if it runs inside another Client's start (distributed holds the runner's
    lock there). Seen as a hang after a refused connection, e.g. a rejected certificate."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class DaskSetupError(ZigguratError, RuntimeError):
    """No usable cluster: dask missing, the scheduler unreachable or insecure, bad TLS files, no
    workers, mixed targets (a user error: the CLI prints it as one `ziggurat: error:` line)."""


class RemoteTaskError(Exception):
    """A dask task failed on its worker; the text is read from the pickled exception without
    unpickling it (a worker's pickle would run the worker's code here)."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise DaskSetupError(
            f"measuring on a dask cluster needs dask.distributed: {INSTALL_HINT}"
        ) from e
    return distributed


# ----------------------------------------------------------------------------- security


def tls_security(ca_file: str | None, cert_file: str | None, key_file: str | None = None) -> Any:
    """A `distributed.Security` for the tuner's client (`--dask-tls-ca/-cert/-key`), encryption
    required. Each file is read and loaded first, so a bad one is named, not a handshake error."""
    distributed = _import_distributed()
    flags = {"--dask-tls-ca": ca_file, "--dask-tls-cert": cert_file, "--dask-tls-key": key_file}
    for flag, path in flags.items():
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                head = f.read(1 << 20)
        except OSError as e:
            raise DaskSetupError(f"cannot read the TLS file {path} ({flag}): {e.strerror}") from e
        if b"-----BEGIN " not in head:
            raise DaskSetupError(f"the TLS file {path} ({flag}) is not a PEM file")
    if ca_file is None or cert_file is None:
        given = ", ".join(flag for flag, path in flags.items() if path is not None)
        raise DaskSetupError(
            "TLS needs the cluster's CA certificate (--dask-tls-ca) and this client's "
            "certificate (--dask-tls-cert, with --dask-tls-key unless the key is in it); "
            f"got {given or 'neither'}"
        )
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        ctx.load_verify_locations(cafile=ca_file)
    except (ssl.SSLError, OSError) as e:
        raise DaskSetupError(f"{ca_file} (--dask-tls-ca) holds no CA certificate: {e}") from e
    try:
        # no password: OpenSSL would prompt on the terminal (dask loads the key again, unasked)
        ctx.load_cert_chain(cert_file, key_file, password=lambda: b"")
    except (ssl.SSLError, OSError) as e:
        where = f"{cert_file} (--dask-tls-cert)"
        where += f", {key_file} (--dask-tls-key)" if key_file else ""
        raise DaskSetupError(
            f"{where}: not a certificate and its (unencrypted) private key: {e}"
        ) from e
    return distributed.Security(
        tls_ca_file=ca_file,
        tls_client_cert=cert_file,
        tls_client_key=key_file,
        require_encryption=True,
    )


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def check_address(address: str, security: Any = None, allow_insecure: bool = False) -> None:
    """Refuse what would expose the workers or the tuner: tls:// without certificates, certificates
    with a plain address, and a plain (unauthenticated, unencrypted) scheduler off this machine."""
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        host = parse_host_port(loc)[0] if scheme != "inproc" else ""
    except (ValueError, TypeError) as e:
        raise DaskSetupError(f"--dask {address!r} is not a dask scheduler address: {e}") from e
    has_tls = security is not None and bool(getattr(security, "tls_client_cert", None))
    if scheme in ("tls", "wss"):
        if not has_tls:
            raise DaskSetupError(
                f"the dask scheduler at {address} speaks TLS: give the cluster's CA and this "
                "client's certificate (--dask-tls-ca, --dask-tls-cert, --dask-tls-key)"
            )
    elif scheme == "inproc":
        pass  # this process
    elif security is not None and getattr(security, "require_encryption", False):
        raise DaskSetupError(
            f"{address} is not encrypted ({scheme}://) but TLS certificates were given: "
            "connect to the scheduler's tls:// address"
        )
    elif not _is_loopback(host) and not allow_insecure:
        raise DaskSetupError(
            f"refusing the unencrypted dask scheduler at {address}: anyone who can reach it runs "
            "code on its workers and can forge measurements. Start the cluster with TLS "
            "(see autotune/distributed.py) and connect to tls://... with --dask-tls-ca, "
            "--dask-tls-cert and --dask-tls-key, or bind it to 127.0.0.1; --dask-insecure accepts "
            "it on a network you trust"
        )


def probe_address(address: str, timeout: float = 2.0) -> None:
    """Refuse at once an address of this machine where no scheduler listens: distributed retries
    a refused connection until its timeout (a minute). An inproc:// address names a scheduler of
    this process (none: refused); a loopback port is tried with a plain TCP connection (refused:
    refused; anything else is left to the client). Other machines are not probed."""
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        host, port = parse_host_port(loc) if scheme != "inproc" else ("", 0)
    except (ValueError, TypeError) as e:
        raise DaskSetupError(f"--dask {address!r} is not a dask scheduler address: {e}") from e
    if scheme == "inproc":
        from distributed.comm.inproc import global_manager

        parts = loc.split("/")  # ip/pid/n of a listener of this process
        try:
            here = len(parts) == 3 and parts[1] == str(os.getpid())
            here = here and global_manager.get_listener_for(loc) is not None
        except (ValueError, TypeError):
            here = False
        if not here:
            raise DaskSetupError(
                f"no dask scheduler at {address}: an inproc:// address names a scheduler started "
                "in this process (from Python); give the scheduler's tcp:// or tls:// address"
            )
        return
    if scheme not in ("tcp", "tls", "ws", "wss") or not _is_loopback(host):
        return
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout):
            pass
    except ConnectionRefusedError:
        raise DaskSetupError(
            f"cannot reach the dask scheduler at {address}: connection refused (is a scheduler "
            "listening there?)"
        ) from None
    except OSError:
        pass  # no answer in time, or another failure: the client tries for its own timeout


def _clean(text: object, limit: int = _MAX_TEXT) -> str:
    """Worker-written text as one printable string (no terminal escapes), at most `limit` chars."""
    s = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in str(text)[: limit + 1])
    return s if len(s) <= limit else s[: limit - 3] + "..."


def describe_pickled_exception(exception: Any) -> str:
    """'Class: message' of a failed task's exception (pickled bytes, or dask's Serialized wrapper
    of them), read from the pickle's opcodes (`pickletools.genops` executes nothing)."""
    data = None
    if isinstance(exception, (bytes, bytearray, memoryview)):
        data = bytes(exception)
    else:
        header = getattr(exception, "header", None)
        frames = getattr(exception, "frames", None)
        if (
            isinstance(header, dict)
            and header.get("serializer") == "dask"
            and header.get("type") == "bytes"
            and not any(header.get("compression") or ())
            and isinstance(frames, (list, tuple))
        ):
            data = b"".join(bytes(f) for f in frames)
    unknown = "the task failed on its worker (its exception is not unpickled here)"
    if data is None or len(data) > 1 << 20:
        return unknown
    memo: dict[int, Any] = {}
    strings: list[str] = []  # strings pushed, the module/name pairs of globals taken out
    found: list[tuple[str, str, int]] = []  # (module, name, strings seen before it)
    pushed: Any = None
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            if name == "MEMOIZE":
                memo[len(memo)] = pushed
                continue
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                if isinstance(arg, int):
                    memo[arg] = pushed
                continue
            pushed = None
            if "UNICODE" in name and isinstance(arg, str):
                strings.append(arg)
                pushed = arg
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                pushed = memo.get(arg) if isinstance(arg, int) else None
                if isinstance(pushed, str):
                    strings.append(pushed)
            elif name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append((strings[-2], strings[-1], len(strings) - 2))
                del strings[-2:]
            elif name == "GLOBAL" and isinstance(arg, str):
                module, _, qualname = arg.partition(" ")
                found.append((module, qualname, len(strings)))
    except Exception:  # truncated or not a pickle: what was read so far still counts
        pass
    for module, qualname, seen in found:
        if module.split(".")[0] in ("tblib", "copyreg", "copy_reg", "_codecs", "functools"):
            continue
        if module == "builtins" and not qualname[:1].isupper():
            continue  # getattr and friends
        message = strings[seen] if seen < len(strings) else ""
        return _clean(f"{qualname}: {message}" if message else qualname, 500)
    return unknown


@functools.cache
def _safe_client_class() -> type:
    """distributed.Client, minus everything that unpickles what a worker can write."""
    distributed = _import_distributed()

    client_class: Any = distributed.Client

    class SafeClient(client_class):
        """A client whose report stream leaves dask's Serialized payloads serialized, that drops
        the pickled result type, names a failed task's exception without unpickling it, and
        handles no events (distributed's "warn" handler unpickles what a worker logs). One that
        fails to start is closed at once (see _abandon)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            try:
                super().__init__(*args, **kwargs)
            except BaseException:
                self._abandon()
                raise

        def _abandon(self) -> None:
            """Close a client whose start failed while its event loop still runs: left to its
            __del__ at exit, distributed waits 2 x the timeout for a loop already stopped, then
            prints a traceback."""
            client: Any = self
            try:
                if getattr(client, "status", "closed") not in ("closed", "newly-created"):
                    client.close(timeout=10)
            except Exception:
                pass
            finally:
                client.status = "closed"  # __del__ closes nothing more
                with contextlib.suppress(Exception):
                    client._loop_runner.stop()

        async def _ensure_connected(self, timeout: float | None = None) -> None:
            await super()._ensure_connected(timeout=timeout)
            comm = getattr(self.scheduler_comm, "comm", None)
            if comm is not None:  # every message on it after the handshake (reconnects too)
                comm.deserialize = False

        def _handle_key_in_memory(self, key: Any = None, type: Any = None, workers: Any = None):
            return super()._handle_key_in_memory(key=key, type=None, workers=workers)

        def _handle_task_erred(self, key: Any = None, exception: Any = None, traceback: Any = None):
            error = RemoteTaskError(describe_pickled_exception(exception))
            return super()._handle_task_erred(key=key, exception=error, traceback=None)

        async def _handle_event(self, topic: str, event: Any) -> None:
            return None

    return SafeClient


# ----------------------------------------------------------------------------- the worker side


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


# ----------------------------------------------------------------------------- checking replies


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


# ----------------------------------------------------------------------------- targets


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


class DaskMeasurer:
    """A Measurer for `tune_task`: measures each batch on the workers of a dask cluster.

    `cluster` is a scheduler address ("tls://host:8786") or a `distributed.Client` (its scheduler
    and security are used; it is left open). `security` is a `distributed.Security` (see
    `tls_security`); a plain tcp:// scheduler on another machine needs `allow_insecure`. Either
    way the measurer talks through a client of its own that unpickles nothing workers send.
    `measure_kwargs` go to `measure` on the workers (repeat, number, timeout_s, workers, rtol,
    atol, threads; target and preset for a GPU tune). `chunk_timeout_s` bounds the wait for one
    chunk (default: 120 s plus 3 x the run timeout per candidate); `chunk_fn` replaces the
    function run per chunk (tests). `.target` is the workers' common host target ({cpu,
    features}), `.device` their common device on a GPU target (None on the CPU); `remote` makes
    `tune_task` measure a new best again here (on a GPU target, on this machine's device of the
    api). Results whose costs imply more than `.peak_flops` are `implausible_timing` failures.
    """

    remote = True

    def __init__(
        self,
        cluster: str | Any,
        measure_kwargs: Mapping[str, Any] | None = None,
        chunk_timeout_s: float | None = None,
        connect_timeout_s: float = 60.0,
        chunk_fn: Callable[..., list[MeasureResult]] = _measure_chunk,
        security: Any = None,
        allow_insecure: bool = False,
    ) -> None:
        _import_distributed()
        self.client: Any = None
        self.measure_kwargs = dict(measure_kwargs or {})
        for name in ("kernel_irs", "runner"):
            if name in self.measure_kwargs:
                raise ValueError(f"DaskMeasurer: measure's {name}= cannot be sent to workers")
        self.api = str(self.measure_kwargs.get("target", CPU))
        if self.api != CPU and self.api not in GPU_APIS:
            raise ValueError(f"DaskMeasurer: unknown target {self.api!r}")
        self.chunk_timeout_s = chunk_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._chunk_fn = chunk_fn
        self._remote_fn: Callable[..., Any] = _remote_chunk  # what each dask task runs
        if isinstance(cluster, str):
            self.address = cluster
        else:  # a Client (or a cluster object): its scheduler, with its security
            self.address = str(
                getattr(getattr(cluster, "scheduler", None), "address", None)
                or getattr(cluster, "scheduler_address", "?")
            )
            if security is None:
                security = getattr(cluster, "security", None)
        check_address(self.address, security, allow_insecure)
        probe_address(self.address, min(2.0, connect_timeout_s))
        try:
            with _no_collection():
                self.client = _safe_client_class()(
                    self.address,
                    timeout=connect_timeout_s,
                    security=security,
                    deserializers=SAFE_DESERIALIZERS,
                    direct_to_workers=False,
                    set_as_default=False,
                    name="ziggurat-tune",
                )
        except Exception as e:  # refused, no answer, a failed TLS handshake (a bad certificate)
            hint = " (is this client's certificate signed by the cluster's CA?)" if security else ""
            raise DaskSetupError(
                f"cannot reach the dask scheduler at {self.address}: {type(e).__name__}: "
                f"{_clean(e, 300)}{hint}"
            ) from e
        try:
            try:
                self.client.wait_for_workers(1, timeout=connect_timeout_s)
            except TimeoutError as e:
                raise DaskSetupError(
                    f"no dask worker joined the scheduler at {self.address} "
                    f"within {connect_timeout_s:g} s"
                ) from e
            self._targets: dict[str, dict[str, str]] = {}
            self._identity: dict[str, str] = {}  # what every reply must name: cpu (+ device)
            self._check_workers()
            if not self._targets:
                raise DaskSetupError(
                    f"no dask worker at {self.address} said what it measures on within "
                    f"{connect_timeout_s:g} s"
                )
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
        """The current workers; ask the new ones for their target (all must be the same). One
        that does not answer in time stays unchecked (it is asked again next batch)."""
        addresses = self._worker_addresses()
        new = [a for a in addresses if a not in self._targets]
        if new:
            futures = {
                a: self.client.submit(
                    _remote_target, self.api, pure=False, workers=[a], allow_other_workers=False
                )
                for a in new
            }
            _wait_all(list(futures.values()), self.connect_timeout_s)  # the ones that answer count
            reported: dict[str, dict[str, str]] = {}
            for a, future in futures.items():
                if future.status != "finished":
                    future.cancel()
                    continue
                try:
                    text = future.result(timeout=self.connect_timeout_s)
                    reply = json.loads(text) if isinstance(text, str) else None
                except Exception:
                    reply = None
                if isinstance(reply, dict) and isinstance(reply.get("error"), str):
                    raise DaskSetupError(
                        f"the dask worker {a} cannot measure on {self.api}: "
                        f"{_clean(reply['error'], 300)}"
                    )
                target = _parse_target(reply)
                if target is not None and ("device" in target) != (self.api != CPU):
                    target = None  # a CPU target for a GPU tune, or the other way round
                if target is None:
                    raise DaskSetupError(f"the dask worker {a} reported no valid target")
                reported[a] = target
            targets = {**self._targets, **reported}
            if targets:
                target = common_target(targets)  # raises before a mixed cluster measures anything
                self._targets, self._identity = targets, target
        return addresses

    @property
    def target(self) -> dict[str, str]:
        """The workers' host target ({cpu, features}): the `target` of the records they make."""
        return {k: v for k, v in self._identity.items() if k != "device"}

    @property
    def device(self) -> dict[str, Any] | None:
        """The workers' device on a GPU target (gpu_runner.device_info), None on the CPU."""
        return _device_of(self._identity)

    @property
    def peak_flops(self) -> float | None:
        """The most FLOP/s the workers' device could reach (autotune/measure/peak.py): their GPU,
        or `threads` cores of their CPU."""
        device = self.device
        if device is not None:
            return gpu_peak_flops(device)
        threads = self.measure_kwargs.get("threads", 1)
        threads = threads if type(threads) is int and threads > 0 else 1
        return cpu_peak_flops(threads, self.target.get("features", ""))

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
            current = self._check_workers()
        except DaskSetupError:
            raise
        except Exception as e:
            # no chunk failed, nothing was measured: stop (the records so far are kept; a later
            # run resumes) rather than record every remaining config as a failure
            raise DaskSetupError(
                f"lost the dask scheduler at {self.address}: {type(e).__name__}: {e}"
            ) from e
        addresses = [a for a in current if a in self._targets]  # checked, and still there
        n = max(1, min(len(addresses), len(candidates)))
        size = math.ceil(len(candidates) / n)
        chunks = [candidates[i : i + size] for i in range(0, len(candidates), size)]
        futures: list[Any] = []
        for i, chunk in enumerate(chunks):
            try:
                where = [addresses[i % len(addresses)]] if addresses else None
                futures.append(
                    self.client.submit(
                        self._remote_fn,
                        self._chunk_fn,
                        task,
                        chunk,
                        self.measure_kwargs,
                        pure=False,
                        workers=where,
                        allow_other_workers=True,
                    )
                )
            except Exception as e:
                futures.append(e)
        timeout = max(self._timeout(len(c)) for c in chunks)
        _wait_all([f for f in futures if not isinstance(f, BaseException)], timeout)
        results: list[MeasureResult] = []
        for chunk, future in zip(chunks, futures, strict=True):
            results += self._collect(chunk, future, timeout)
        flops = getattr(task, "flops", 0.0)  # a timing beyond the workers' device is refused
        flops = float(flops) if isinstance(flops, int | float) else 0.0
        peak = self.peak_flops
        return [implausible(r, flops, peak) for r in results]

    def _collect(self, chunk: list[list[str]], future: Any, timeout: float) -> list[MeasureResult]:
        if isinstance(future, BaseException):
            return [_failed(f"submit: {type(future).__name__}: {future}") for _ in chunk]
        status = future.status
        if status == "finished":
            try:  # msgpack only: a reply that is not plain data is refused, not unpickled
                reply = future.result(timeout=timeout)
            except Exception as e:
                why = f"the worker's reply was refused ({type(e).__name__}: {_clean(e, 300)})"
                return [_failed(why) for _ in chunk]
            return decode_reply(reply, len(chunk), self._identity)
        if status == "error":
            exc = future.exception()
            why = str(exc) if isinstance(exc, RemoteTaskError) else f"{type(exc).__name__}: {exc}"
        else:  # pending, lost, cancelled
            future.cancel()
            why = f"no result within {timeout:g} s (task {status})"
        return [_failed(why) for _ in chunk]

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        client, self.client = getattr(self, "client", None), None
        if client is not None:
            client.close()

    def __enter__(self) -> DaskMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DaskMeasurer({self.n_workers} workers, cpu {self.target.get('cpu', '?')})"


def _wait_all(futures: list[Any], timeout: float) -> None:
    """Wait until every future is done or `timeout` s passed (each future's own client: dask's
    `wait` uses the process's default client, which may be another one or none)."""
    deadline = time.monotonic() + timeout
    for future in futures:
        try:
            future.exception(timeout=max(0.01, deadline - time.monotonic()))
        except Exception:  # timed out or cancelled: the caller reads each status
            pass


def _all_failed(why: str, n: int) -> list[MeasureResult]:
    return [_failed(why) for _ in range(n)]


def _failed(why: str) -> MeasureResult:
    why = why if len(why) <= 1000 else why[:997] + "..."
    return MeasureResult(error_kind="runtime_error", error=f"dask: {why}")


__all__ = [
    "DaskMeasurer",
    "DaskSetupError",
    "RemoteTaskError",
    "check_address",
    "common_target",
    "decode_reply",
    "describe_pickled_exception",
    "encode_reply",
    "tls_security",
]
