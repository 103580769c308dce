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

The package splits this by concept: errors.py, security.py (TLS and address checks),
safe_client.py (the transport), worker.py (what runs on workers), reply_checks.py (checking
what they send) and measurer.py (`DaskMeasurer`). This module re-exports their names; the
functions dask runs on workers stay importable here too.
"""

from __future__ import annotations

from autotune.distributed.errors import INSTALL_HINT as INSTALL_HINT
from autotune.distributed.errors import DaskSetupError, RemoteTaskError
from autotune.distributed.measurer import DaskMeasurer
from autotune.distributed.reply_checks import common_target, decode_reply
from autotune.distributed.safe_client import SAFE_DESERIALIZERS as SAFE_DESERIALIZERS
from autotune.distributed.safe_client import _no_collection as _no_collection
from autotune.distributed.safe_client import _safe_client_class as _safe_client_class
from autotune.distributed.safe_client import describe_pickled_exception
from autotune.distributed.security import check_address, tls_security
from autotune.distributed.security import probe_address as probe_address
from autotune.distributed.worker import _measure_chunk as _measure_chunk
from autotune.distributed.worker import _remote_chunk as _remote_chunk
from autotune.distributed.worker import _remote_target as _remote_target
from autotune.distributed.worker import encode_reply
from autotune.distributed.worker import worker_target as worker_target

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
