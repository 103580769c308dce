"""`DaskMeasurer`: a tuning Measurer that splits each batch into chunks, one per worker, submits
them through the safe client, and collects the checked results in candidate order. The protocol
it speaks (worker.py, reply_checks.py) and the transport (safe_client.py) are apart from it."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from autotune.distributed.errors import DaskSetupError, RemoteTaskError, _clean, _import_distributed
from autotune.distributed.reply_checks import (
    _device_of,
    _failed,
    _parse_target,
    common_target,
    decode_reply,
)
from autotune.distributed.safe_client import SAFE_DESERIALIZERS, _no_collection, _safe_client_class
from autotune.distributed.security import check_address, probe_address
from autotune.distributed.worker import _measure_chunk, _remote_chunk, _remote_target
from autotune.measure import (
    MeasureResult,
    cpu_peak_flops,
    gpu_peak_flops,
    implausible,
)
from autotune.tuning_target import CPU, GPU_APIS


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
