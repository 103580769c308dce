"""Measurement on a dask cluster (autotune/distributed.py), on a local two-worker cluster: a batch
is split over the workers and comes back in candidate order with the kinds local measurement gives,
tuning records carry the workers' target, a failing chunk becomes error results (tuning goes on),
and a cluster of mixed targets is refused.

Security: a TLS cluster (certificates made here) admits our client and no other; a plain scheduler
off this machine is refused; a malicious worker runs no code in the tuner through any reply dask
relays; forged results fail with the reason; a remote winner is re-checked here before it counts.
Every cluster listens on 127.0.0.1 only."""

from __future__ import annotations

import datetime
import gc
import ipaddress
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import onnx
import pytest

from autotune.database import Database
from autotune.database import host_target as db_host_target
from autotune.measure import (
    IMPLAUSIBLE,
    LocalMeasurer,
    Measurer,
    MeasureResult,
    cpu_peak_flops,
    host_target,
    measure,
)
from autotune.space import SearchSpace
from autotune.task import Task, anchor_info, extract_tasks
from autotune.tuner import tune_task

if TYPE_CHECKING:
    from distributed import Client

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed (pip install 'ziggurat[tune]')"
)
import dask  # noqa: E402  (after the skip: dask comes with distributed)

import autotune.distributed as zdist  # noqa: E402
import autotune.distributed.measurer as zmeasurer  # noqa: E402
from autotune.distributed import DaskMeasurer, DaskSetupError, common_target  # noqa: E402
from compiler import zoo  # noqa: E402

FAST = {"repeat": 2}  # measure kwargs on the workers: two timed repeats are enough here


def matmul_model(n: int = 32) -> onnx.ModelProto:
    return zoo.matmul(n)


@pytest.fixture(scope="module")
def task() -> Task:
    (t,) = extract_tasks(matmul_model())
    return t


@pytest.fixture(scope="module")
def candidates(task: Task) -> list[list[str]]:
    """The default config and three sampled ones, as pass lists."""
    space = SearchSpace(anchor_info(task))
    rng = random.Random(0)
    configs = [space.default_config()]
    while len(configs) < 4:
        c = space.sample(rng)
        if space.key(c) not in {space.key(x) for x in configs}:
            configs.append(c)
    return [space.to_passes(c, task.anchor) for c in configs]


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    # a worker that dies fails its task at once (the default retries it on 3 more workers)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        )
    c = distributed.Client(cluster)
    for topic in ("warn", "print"):  # this test client must not run what a malicious worker logs
        c.unsubscribe_topic(topic)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def worker_targets(client: Client) -> dict[str, dict[str, str]]:
    return client.run(host_target)


def test_a_batch_is_measured_on_the_workers_like_locally(
    client: Client, task: Task, candidates: list[list[str]]
) -> None:
    m = DaskMeasurer(client, measure_kwargs=FAST)
    assert m.n_workers == 2
    targets = worker_targets(client)
    assert sorted(m.workers) == sorted(targets)
    assert all(t == m.target for t in targets.values())

    results = m(task, candidates)
    assert len(results) == 4
    for r in results:
        assert r.error_kind is None, r.error
        assert len(r.costs) == 2 and all(c > 0 for c in r.costs)
    local = measure(task, candidates, repeat=1)
    assert [r.error_kind for r in results] == [r.error_kind for r in local]

    # each worker keeps its runner process (and reference) from one batch to the next
    def runner_pid():
        from autotune.measure import runner as runner_module

        return runner_module._RUNNER.pid if runner_module._RUNNER is not None else None

    pids = client.run(runner_pid)
    assert all(pids.values()), pids  # both workers measured a chunk
    again = m(task, candidates[:2])
    assert [r.error_kind for r in again] == [None, None]
    assert client.run(runner_pid) == pids
    m.close()  # a client passed in stays open
    assert client.status == "running"


def test_results_come_back_in_candidate_order_one_chunk_per_worker(
    client: Client,
) -> None:
    def tag(task, cands, kwargs):  # runs on a worker: says which candidate, where
        from distributed import get_worker

        where = get_worker().address
        return [MeasureResult(costs=[1.0], error=f"{json.dumps(c)}@{where}") for c in cands]

    with DaskMeasurer(client, chunk_fn=tag) as m:
        cands = [[f"pass-{i}"] for i in range(7)]
        results = m(None, cands)
    assert [json.loads(r.error.split("@")[0]) for r in results] == cands
    where = [r.error.split("@")[1] for r in results]
    assert set(where) == set(m.workers)  # both workers got a chunk ...
    assert where == sorted(where, key=where.index)  # ... of consecutive candidates
    assert all(r.ok for r in results)


def test_tune_task_records_the_workers_target(tmp_path: Path, client: Client, task: Task) -> None:
    info = anchor_info(task)
    path = tmp_path / "db.jsonl"
    m = DaskMeasurer(client, measure_kwargs=FAST)
    result = tune_task(
        task, info, Database(path), 8, tuner="random", batch=4, measurer=m, progress=None
    )
    records = [json.loads(s) for s in path.read_text().splitlines()]
    assert len(records) == 8 == len(result.curve)
    targets = list(worker_targets(client).values())
    assert all(r["target"] == targets[0] for r in records)
    assert [r["error_kind"] for r in records].count(None) >= 1, [r["error"] for r in records]
    assert result.best_gflops > 0


def test_records_name_the_measurer_target_not_this_host(tmp_path: Path, task: Task) -> None:
    """Where a measurer says it measured (`.target`), that goes in the record; a LocalMeasurer
    (measure.measure) leaves the database to write this host's target."""
    info = anchor_info(task)
    elsewhere = {"cpu": "elsewhere-cpu", "features": "+far"}

    def here(task, cands):
        return [MeasureResult(costs=[1e-6]) for _ in cands]

    class Remote:  # a Measurer (autotune/measure/interfaces.py) that names where it measured
        remote = False
        target = elsewhere
        device = None
        measure_kwargs: dict = {}

        def __call__(self, task, cands):
            return here(task, cands)

    cases: list[tuple[Measurer, dict[str, str]]] = [
        (Remote(), elsewhere),
        (LocalMeasurer(here), db_host_target()),
    ]
    for i, (fn, want) in enumerate(cases):
        path = tmp_path / f"{i}.jsonl"
        tune_task(task, info, Database(path), 3, tuner="random", measurer=fn, progress=None)
        assert [json.loads(s)["target"] for s in path.read_text().splitlines()] == [want] * 3


def test_failures_are_results_and_tuning_goes_on(
    client: Client, task: Task, candidates: list[list[str]]
) -> None:
    with DaskMeasurer(client, measure_kwargs=FAST) as m:
        # bad pass specs fail to compile on the worker: measure records it, the others measure
        results = m(task, [candidates[0], ["tile{sizes=4,4}"], candidates[1], ["no-such-pass"]])
    assert [r.error_kind for r in results] == [None, "compile_error", None, "compile_error"], (
        results
    )
    assert "expected 3 tile sizes" in results[1].error

    def boom(task, cands, kwargs):
        raise RuntimeError("injected failure")

    with DaskMeasurer(client, chunk_fn=boom) as m:
        results = m(task, candidates)
    assert [r.error_kind for r in results] == ["runtime_error"] * 4
    assert all(r.error == "dask: RuntimeError: injected failure" for r in results), results

    def slow(task, cands, kwargs):
        time.sleep(3)
        return [MeasureResult(costs=[1.0]) for _ in cands]

    with DaskMeasurer(client, chunk_fn=slow, chunk_timeout_s=0.5) as m:
        results = m(task, candidates)
    assert [r.error_kind for r in results] == ["runtime_error"] * 4
    assert "no result within 0.5 s" in results[0].error


def test_mixed_targets_are_refused() -> None:
    a = {"cpu": "skylake-avx512", "features": "+avx2,+avx512f,+fma"}
    b = {"cpu": "znver3", "features": "+avx2,+fma"}
    assert common_target({"tcp://a:1": a, "tcp://b:1": dict(a)}) == a
    with pytest.raises(DaskSetupError) as e:
        common_target({"tcp://a:1": a, "tcp://b:1": b, "tcp://c:1": b})
    msg = str(e.value)
    assert "2 different targets" in msg
    assert "tcp://a:1: cpu skylake-avx512" in msg and "tcp://b:1, tcp://c:1: cpu znver3" in msg
    # the same CPU name with other features: the differing features are named
    with pytest.raises(DaskSetupError, match=r"\+avx512f"):
        common_target({"tcp://a:1": a, "tcp://b:1": {"cpu": a["cpu"], "features": "+avx2,+fma"}})
    with pytest.raises(DaskSetupError, match="no dask workers"):
        common_target({})


def test_without_dask_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(DaskSetupError, match=r"pip install 'ziggurat\[tune\]'"):
        DaskMeasurer("tcp://127.0.0.1:8786")


def test_cli_tune_with_dask(tmp_path: Path, client: Client, capsys: pytest.CaptureFixture) -> None:
    from compiler.cli.main import main

    model = tmp_path / "mm.onnx"
    onnx.save(matmul_model(16), model)
    db = tmp_path / "db.jsonl"
    address = client.scheduler.address
    rc = main(
        [
            "tune",
            str(model),
            "--trials",
            "2",
            "--db",
            str(db),
            "--tuner",
            "random",
            "--dask",
            address,
        ]
    )
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"measuring on 2 dask workers ({host_target()['cpu']})" in err
    records = [json.loads(s) for s in db.read_text().splitlines()]
    assert len(records) == 2
    assert all(r["target"] == host_target() for r in records)


# ----------------------------------------------------------------------------- GPU targets

GPU = {"target": "opencl", "preset": "opencl-gpu", "repeat": 2}  # SIMT schedules, run on PoCL


def needs_opencl() -> None:
    from compiler.backends.gpu.opencl_runtime import opencl_available

    if opencl_available() is not None:
        pytest.skip(f"OpenCL: {opencl_available()}")


def test_gpu_candidates_are_measured_on_the_workers_device(client: Client, task: Task) -> None:
    needs_opencl()
    from autotune.gpu_space import GpuSearchSpace
    from autotune.measure import device_info
    from passes.schedule.gpu_target import gpu_target

    space = GpuSearchSpace(anchor_info(task), gpu_target("opencl-gpu"))
    rng = random.Random(0)
    configs = [space.default_config(), space.sample(rng), space.sample(rng)]
    with DaskMeasurer(client, measure_kwargs=GPU) as m:
        assert m.device == device_info("opencl")  # the workers' PoCL, as this process sees it
        assert m.target == host_target()  # and their CPU, without the device
        results = m(task, [space.to_passes(c, task.anchor) for c in configs])
    assert [r.error_kind for r in results] == [None] * 3, [r.error for r in results]
    assert all(len(r.costs) == 2 for r in results)


def test_cli_tune_opencl_with_dask_records_the_workers_device(
    tmp_path: Path, client: Client, capsys: pytest.CaptureFixture
) -> None:
    needs_opencl()
    from autotune.measure import device_info
    from compiler.cli.main import main

    model = tmp_path / "mm.onnx"
    onnx.save(matmul_model(16), model)
    db = tmp_path / "db.jsonl"
    argv = ["tune", str(model), "--trials", "3", "--db", str(db), "--target", "opencl"]
    rc = main([*argv, "--tuner", "random", "--dask", client.scheduler.address])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"measuring on 2 dask workers ({device_info('opencl')['name']})" in err
    records = [json.loads(s) for s in db.read_text().splitlines()]
    assert len(records) == 3 and all(r["error_kind"] is None for r in records), records
    assert all(r["device"] == device_info("opencl") for r in records)
    assert all(r["target"] == host_target() and r["preset"] == "opencl-cpu" for r in records)


def test_workers_without_the_gpu_api_are_refused_with_why(client: Client) -> None:
    from compiler.backends.gpu.cuda_runtime import cuda_available

    reason = cuda_available()
    if reason is None:
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(
        DaskSetupError, match=r"dask worker tcp://127\.0\.0\.1:\d+ cannot measure on cuda: "
    ) as e:
        DaskMeasurer(client, measure_kwargs={"target": "cuda"})
    assert reason in str(e.value)  # the worker's own reason (the same machine here)


def test_workers_with_different_devices_are_refused_naming_them() -> None:
    cpu = {"cpu": "znver4", "features": "+avx512f"}

    def device(name: str, driver: str) -> str:
        return json.dumps({"api": "cuda", "name": name, "driver_version": driver})

    same = {**cpu, "device": device("NVIDIA H100", "13000")}
    assert common_target({"a": same, "b": dict(same)}) == same
    other = {**cpu, "device": device("NVIDIA H100", "12080")}
    with pytest.raises(DaskSetupError) as e:
        common_target({"tcp://a:1": same, "tcp://b:1": other})
    message = str(e.value)
    assert "tcp://a:1: device NVIDIA H100 (driver_version 13000)" in message
    assert "tcp://b:1: device NVIDIA H100 (driver_version 12080)" in message


def test_a_reply_from_another_device_fails_its_chunk() -> None:
    cpu = {"cpu": "znver4", "features": "+avx512f"}
    mine = {**cpu, "device": json.dumps({"name": "A"})}
    theirs = {**cpu, "device": json.dumps({"name": "B"})}
    reply = zdist.encode_reply([MeasureResult(costs=[1e-3])], theirs)
    (r,) = zdist.decode_reply(reply, 1, mine)
    assert r.error_kind == "runtime_error" and "measured on device B" in r.error, r.error
    (ok,) = zdist.decode_reply(zdist.encode_reply([MeasureResult(costs=[1e-3])], mine), 1, mine)
    assert ok.ok
    bad = {**cpu, "device": "not json"}
    (r,) = zdist.decode_reply(zdist.encode_reply([MeasureResult(costs=[1e-3])], bad), 1, mine)
    assert "names no valid target" in r.error, r.error


def test_a_worker_that_dies_fails_its_chunk_only(client: Client) -> None:
    """Last: it costs a worker (the nanny starts a new one, which the next batch checks)."""

    def die_on_marker(task, cands, kwargs):
        if ["die"] in cands:
            os._exit(3)
        return [MeasureResult(costs=[1.0]) for _ in cands]

    with DaskMeasurer(client, chunk_fn=die_on_marker) as m:
        before = set(m.workers)
        results = m(None, [["a"], ["b"], ["die"], ["c"]])
        assert [r.error_kind for r in results] == [None, None, "runtime_error", "runtime_error"]
        assert results[2].error.startswith("dask: KilledWorker"), results[2].error
        client.wait_for_workers(2, timeout=600)
        again = m(None, [["a"], ["b"]])
        assert all(r.ok for r in again)
        assert set(m.workers) - before  # the restarted worker was asked for its target


# ----------------------------------------------------------------------------- security


def make_pki(d: Path) -> dict[str, str]:
    """PEM files in `d`: a CA ("ca"), a certificate it signed for the scheduler and the worker
    ("node"), one for the tuner ("client"), and a client certificate from another CA ("rogue");
    each with its key ("<name>-key"). What openssl would make, in-process (cryptography)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    out: dict[str, str] = {}

    def issue(cn: str, issuer: tuple | None = None) -> tuple:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        ikey, iname = (key, name) if issuer is None else (issuer[0], issuer[1].subject)
        b = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(iname)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
        )
        if issuer is None:
            usage = x509.KeyUsage(True, False, False, False, False, True, True, False, False)
            b = b.add_extension(usage, critical=True)
        else:
            b = (
                b.add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(ikey.public_key()),
                    critical=False,
                )
                .add_extension(
                    x509.SubjectAlternativeName(
                        [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                    ),
                    critical=False,
                )
                .add_extension(
                    x509.ExtendedKeyUsage(
                        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                    ),
                    critical=False,
                )
            )
        return key, b.sign(ikey, hashes.SHA256())

    def write(stem: str, pair: tuple) -> None:
        key, cert = pair
        (d / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (d / f"{stem}-key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        out[stem], out[f"{stem}-key"] = str(d / f"{stem}.pem"), str(d / f"{stem}-key.pem")

    ca = issue("ziggurat test CA")
    write("ca", ca)
    write("node", issue("node", ca))
    write("client", issue("client", ca))
    write("rogue", issue("rogue client", issue("rogue CA")))
    return out


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    pytest.importorskip("cryptography")
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def no_connection(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Opening a dask client records the address and fails: refusals must come before any
    connection (and nothing here ever reaches an address other than 127.0.0.1)."""
    attempts: list[str] = []

    class NoConnect:
        def __init__(self, address: str, *args: object, **kwargs: object) -> None:
            attempts.append(address)
            raise AssertionError(f"connected to {address}")

    monkeypatch.setattr(distributed, "Client", NoConnect)
    monkeypatch.setattr(zmeasurer, "_safe_client_class", lambda: NoConnect, raising=False)
    # a loopback port with nothing on it is refused before the client (see test_main.py)
    monkeypatch.setattr(zmeasurer, "probe_address", lambda address, timeout=0.0: None)
    return attempts


def test_an_unencrypted_scheduler_elsewhere_is_refused(
    no_connection: list[str], pki: dict[str, str]
) -> None:
    for address in (
        "tcp://10.1.2.3:8786",
        "10.1.2.3:8786",
        "tcp://farm.example:8786",
        "tcp://[2001:db8::1]:8786",
    ):
        with pytest.raises(DaskSetupError, match="refusing the unencrypted dask scheduler") as e:
            DaskMeasurer(address)
        assert "--dask-insecure" in str(e.value) and "tls://" in str(e.value)
    with pytest.raises(DaskSetupError, match="speaks TLS: give the cluster's CA"):
        DaskMeasurer("tls://10.1.2.3:8786")
    security = zdist.tls_security(pki["ca"], pki["client"], pki["client-key"])
    assert security.require_encryption
    with pytest.raises(DaskSetupError, match="not encrypted"):
        DaskMeasurer("tcp://10.1.2.3:8786", security=security)
    assert no_connection == []
    # this machine, an explicit allow_insecure (--dask-insecure), TLS: connecting is allowed
    allowed = [
        ("tcp://127.0.0.1:8786", {}),
        ("tcp://localhost:8786", {}),
        ("tcp://[::1]:8786", {}),
        ("tcp://10.1.2.3:8786", {"allow_insecure": True}),
        ("tls://10.1.2.3:8786", {"security": security}),
    ]
    for address, kwargs in allowed:
        with pytest.raises(DaskSetupError, match="cannot reach"):
            DaskMeasurer(address, **kwargs)
    assert no_connection == [a for a, _ in allowed]


def test_cli_refuses_insecure_setups_and_names_bad_tls_files(
    tmp_path: Path, pki: dict[str, str], no_connection: list[str], capsys: pytest.CaptureFixture
) -> None:
    from compiler.cli.main import main

    model = tmp_path / "mm.onnx"
    onnx.save(matmul_model(16), model)
    base = ["tune", str(model), "--trials", "1", "--db", str(tmp_path / "db.jsonl")]
    tls = ["--dask", "tls://10.1.2.3:8786"]
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello\n")
    missing = str(tmp_path / "missing-ca.pem")
    cases = [
        (
            ["--dask", "tcp://10.1.2.3:8786"],
            "refusing the unencrypted dask scheduler at tcp://10.1.2.3:8786",
        ),
        (
            [*tls, "--dask-tls-ca", missing, "--dask-tls-cert", pki["client"]],
            f"cannot read the TLS file {missing} (--dask-tls-ca)",
        ),
        (
            [*tls, "--dask-tls-ca", pki["ca"], "--dask-tls-cert", str(not_pem)],
            f"the TLS file {not_pem} (--dask-tls-cert) is not a PEM file",
        ),
        (
            [
                *tls,
                "--dask-tls-ca",
                pki["ca"],
                "--dask-tls-cert",
                pki["client"],
                "--dask-tls-key",
                pki["rogue-key"],
            ],
            "(--dask-tls-key): not a certificate and its (unencrypted) private key",
        ),
        (
            [
                *tls,
                "--dask-tls-ca",
                pki["client-key"],
                "--dask-tls-cert",
                pki["client"],
                "--dask-tls-key",
                pki["client-key"],
            ],
            "(--dask-tls-ca) holds no CA certificate",
        ),
        ([*tls, "--dask-tls-ca", pki["ca"]], "TLS needs the cluster's CA certificate"),
        (tls, "speaks TLS"),
        (["--dask-tls-ca", pki["ca"]], "need --dask"),
    ]
    for args, message in cases:
        rc = main(base + args)
        err = capsys.readouterr().err
        assert rc == 1, (args, err)
        assert "ziggurat: error: " in err and message in err, (args, err)
        assert "Traceback" not in err
    assert no_connection == []


def test_a_tls_cluster_admits_our_client_only(
    tmp_path: Path, pki: dict[str, str], capsys: pytest.CaptureFixture
) -> None:
    from compiler.cli.main import main

    security = distributed.Security(
        tls_ca_file=pki["ca"],
        tls_scheduler_cert=pki["node"],
        tls_scheduler_key=pki["node-key"],
        tls_worker_cert=pki["node"],
        tls_worker_key=pki["node-key"],
        tls_client_cert=pki["client"],
        tls_client_key=pki["client-key"],
        require_encryption=True,
    )
    cluster = distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        protocol="tls://",
        host="127.0.0.1",
        security=security,
        dashboard_address=None,
    )
    try:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        # strangers: no certificate, plain tcp, a certificate from another CA
        with pytest.raises(Exception):  # noqa: B017 (whatever dask raises: no client)
            distributed.Client(address, timeout=5, set_as_default=False)
        gc.collect()  # free the failed client now, not inside the next one's start (see
        # autotune.distributed._no_collection: dask deadlocks otherwise)
        with pytest.raises(Exception):  # noqa: B017
            distributed.Client(address.replace("tls://", "tcp://"), timeout=5, set_as_default=False)
        gc.collect()
        rogue = zdist.tls_security(pki["ca"], pki["rogue"], pki["rogue-key"])
        with pytest.raises(DaskSetupError, match="cannot reach the dask scheduler"):
            DaskMeasurer(address, security=rogue, connect_timeout_s=5)
        with pytest.raises(DaskSetupError, match="speaks TLS"):
            DaskMeasurer(address)
        # ours measures
        model = tmp_path / "mm.onnx"
        onnx.save(matmul_model(16), model)
        db = tmp_path / "db.jsonl"
        tls = [
            "--dask-tls-ca",
            pki["ca"],
            "--dask-tls-cert",
            pki["client"],
            "--dask-tls-key",
            pki["client-key"],
        ]
        rc = main(
            [
                "tune",
                str(model),
                "--trials",
                "2",
                "--db",
                str(db),
                "--tuner",
                "random",
                "--dask",
                address,
                *tls,
            ]
        )
        err = capsys.readouterr().err
        assert rc == 0, err
        assert "measuring on 1 dask workers" in err
        records = [json.loads(s) for s in db.read_text().splitlines()]
        assert len(records) == 2 and [r["error_kind"] for r in records].count(None) >= 1, records
    finally:
        cluster.close()


@pytest.mark.parametrize("channel", ["result", "type", "exception", "warn"])
def test_a_malicious_worker_runs_no_code_in_the_tuner(
    tmp_path: Path, client: Client, channel: str
) -> None:
    """Four ways dask hands a worker's pickle to the client: the result, the result's type, the
    task's exception, a "warn" event. The worker below uses each to create a marker file here."""
    marker = str(tmp_path / "pwned")

    class Touch:  # unpickling one creates the marker: the worker's code, run by whoever unpickles
        def __reduce__(self):
            import pathlib

            return (pathlib.Path.touch, (pathlib.Path(marker),))

    def evil(*args):
        """The whole worker side (args end with the candidates and the measure kwargs)."""
        import copyreg
        import json
        import pickle
        import time

        from autotune.measure import host_target

        row = {"costs": [1e-3], "error_kind": None, "error": "", "build_s": 0.0, "run_s": 0.0}
        reply = json.dumps({"target": host_target(), "results": [row] * len(args[-2])})
        if channel == "result":
            return Touch()
        if channel == "type":  # dask sends the result's type pickled: this type pickles as Touch

            class Meta(type):
                pass

            class Text(str, metaclass=Meta):
                pass

            copyreg.pickle(Meta, lambda cls: Touch().__reduce__())
            return Text(reply)
        if channel == "exception":  # the exception the worker reports for the task
            import distributed.worker as w
            from distributed.protocol import to_serialize

            honest = w.error_message

            def forged(e, status="error"):
                w.error_message = honest
                return {**honest(e, status), "exception": to_serialize(Touch())}

            w.error_message = forged
            raise RuntimeError("boom")
        from distributed import get_worker  # warn: an event every client handles by default

        get_worker().log_event("warn", {"message": pickle.dumps(Touch())})
        time.sleep(0.5)
        return reply

    with DaskMeasurer(client.scheduler.address, chunk_fn=evil) as m:
        m._remote_fn = evil  # the worker is the attacker's: it answers what it likes
        results = m(None, [["a"], ["b"], ["c"]])
        time.sleep(1.0)  # events come on their own
    assert not os.path.exists(marker), f"the worker ran code in the tuner through its {channel}"
    if channel == "result":
        assert [r.error_kind for r in results] == ["runtime_error"] * 3
        assert "the worker's reply was refused" in results[0].error
        assert "Could not serialize object of type Touch" in results[0].error
    elif channel == "exception":
        assert [r.error_kind for r in results] == ["runtime_error"] * 3
        assert (
            "the task failed on its worker (its exception is not unpickled here)"
            in results[0].error
        )
    else:  # well-formed lies are results (a new best is re-checked here: see below)
        assert all(r.ok and r.costs == [1e-3] for r in results)


def test_forged_results_fail_with_the_reason(client: Client) -> None:
    def forge(task, cands, kwargs):  # the worker's measure function, lying
        from autotune.measure import MeasureResult

        table = {
            "ok": MeasureResult(costs=[1e-3]),
            "nan": MeasureResult(costs=[1e-3, float("nan")]),
            "inf": MeasureResult(costs=[float("inf")]),
            "negative": MeasureResult(costs=[-1e-3]),
            "zero": MeasureResult(costs=[0.0]),
            "no costs": MeasureResult(costs=[]),
            "text cost": MeasureResult(costs=["fast"]),
            "bool cost": MeasureResult(costs=[True]),
            "unknown kind": MeasureResult(costs=[1e-3], error_kind="pwned"),
            "error not text": MeasureResult(costs=[1e-3], error=7),
            "nan build_s": MeasureResult(costs=[1e-3], build_s=float("nan")),
            "negative wrong_result": MeasureResult(costs=[-1.0], error_kind="wrong_result"),
        }
        return [table[c[0]] for c in cands]

    why = {
        "nan": "cost nan is not a finite positive number of seconds",
        "inf": "cost inf is not a finite positive",
        "negative": "cost -0.001 is not a finite positive",
        "zero": "cost 0.0 is not a finite positive",
        "no costs": "a success without costs",
        "text cost": "cost 'fast' is not a finite positive",
        "bool cost": "cost True is not a finite positive",
        "unknown kind": "unknown error_kind 'pwned'",
        "error not text": "error is a int, not a string",
        "nan build_s": "build_s/run_s are not finite non-negative numbers",
        "negative wrong_result": "cost -1.0 is not a finite positive",
    }
    cases = ["ok", *why]
    with DaskMeasurer(client, chunk_fn=forge) as m:
        results = m(None, [[c] for c in cases])
        assert results[0].ok and results[0].costs == [1e-3]
        for case, r in zip(cases[1:], results[1:]):
            assert r.error_kind == "runtime_error" and why[case] in r.error, (case, r)
            assert "rejected" in r.error and r.costs == []

        def too_few(task, cands, kwargs):
            return forge(task, [["ok"]] * (len(cands) - 1), kwargs)

        m._chunk_fn = too_few
        results = m(None, [["a"], ["b"], ["c"], ["d"]])  # two chunks of two
        assert all(r.error_kind == "runtime_error" for r in results)
        assert "the worker's reply has 1 results for 2 candidates" in results[0].error

        def elsewhere(*args):  # a reply for another machine than the cluster's
            import json

            row = {"costs": [1e-3], "error_kind": None, "error": "", "build_s": 0.0, "run_s": 0.0}
            return json.dumps(
                {"target": {"cpu": "fake-cpu", "features": "+x"}, "results": [row] * len(args[-2])}
            )

        m._remote_fn = elsewhere
        results = m(None, [["a"], ["b"]])
        assert all(r.error_kind == "runtime_error" for r in results)
        assert (
            f"measured on cpu fake-cpu (features +x), not on the cluster's cpu {m.target['cpu']}"
            in results[0].error
        )


def test_replies_are_checked_before_anything_is_believed() -> None:
    target = {"cpu": "c", "features": "+f"}
    row = {"costs": [1e-3, 2e-3], "error_kind": None, "error": "", "build_s": 0.5, "run_s": 0.25}

    def reply(**kw: object) -> str:
        return json.dumps({"target": target, "results": [row], **kw})

    (r,) = zdist.decode_reply(reply(), 1, target)
    assert r == MeasureResult([1e-3, 2e-3], None, "", 0.5, 0.25)
    paired = {**row, "baseline_costs": [3e-3, 4e-3]}  # a paired measurement's
    (r,) = zdist.decode_reply(reply(results=[paired]), 1, target)
    assert r == MeasureResult([1e-3, 2e-3], None, "", 0.5, 0.25, [3e-3, 4e-3])
    (again,) = zdist.decode_reply(zdist.encode_reply([r], target), 1, target)
    assert again == r
    bad = {
        "not text": (b"{}", "is a bytes, not JSON text"),
        "not JSON": ("{", "is not JSON"),
        "too deep": ("[" * 30_000 + "]" * 30_000, "is not JSON"),
        "too large": (" " * 10_000_000, "too large"),
        "not a reply": (json.dumps([row]), "not a chunk reply"),
        "extra key": (reply(pwn=1), "not a chunk reply"),
        "no target": (json.dumps({"results": [row]}), "names no valid target"),
        "bad target": (reply(target={"cpu": 1, "features": ""}), "names no valid target"),
        "other target": (reply(target={"cpu": "d", "features": "+f"}), "measured on cpu d"),
        "count": (reply(results=[row, row]), "has 2 results for 1 candidates"),
        "results not a list": (reply(results={"0": row}), "has dict results"),
        "row not an object": (reply(results=[[1e-3]]), "result 0 rejected: a list, not an object"),
        "missing field": (
            reply(results=[{k: v for k, v in row.items() if k != "run_s"}]),
            "missing ['run_s']",
        ),
        "extra field": (reply(results=[{**row, "exec": "rm -rf"}]), "unexpected ['exec']"),
        "bad baseline": (
            reply(results=[{**row, "baseline_costs": [0.0]}]),
            "baseline_cost 0.0 is not a finite positive number of seconds",
        ),
        "baseline not a list": (
            reply(results=[{**row, "baseline_costs": 1e-3}]),
            "baseline_costs is not a list",
        ),
    }
    for name, (text, message) in bad.items():
        results = zdist.decode_reply(text, 1, target)
        assert len(results) == 1 and results[0].error_kind == "runtime_error", name
        assert message in results[0].error, (name, results[0].error)
    # a chunk's failure is the worker's text, printable; every candidate gets its own result
    out = zdist.decode_reply(
        json.dumps({"target": target, "error": "RuntimeError: \x1b[2Jx"}), 2, target
    )
    assert [r.error for r in out] == ["dask: RuntimeError: ?[2Jx"] * 2 and out[0] is not out[1]


def test_failed_tasks_are_named_without_unpickling(tmp_path: Path) -> None:
    import pickle

    from distributed.core import error_message
    from distributed.scheduler import KilledWorker

    try:
        import no_such_module_here  # noqa: F401
    except ImportError as e:
        honest = error_message(e)["exception"]  # as a worker sends it: dask's Serialize of bytes
    serialized = distributed.protocol.Serialized(*distributed.protocol.serialize(honest))
    assert zdist.describe_pickled_exception(serialized) == (
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
    # a worker's address where dask's stubs want a WorkerState: only the pickle matters here
    killed = pickle.dumps(KilledWorker("_remote_chunk-123", "tcp://127.0.0.1:1", 0))  # type: ignore[arg-type]
    assert zdist.describe_pickled_exception(killed) == "KilledWorker: _remote_chunk-123"
    marker = tmp_path / "pwned"

    class Touch:
        def __reduce__(self):
            return (Path.touch, (marker,))

    evil = pickle.dumps(Touch())
    for payload in (evil, b"not a pickle", None, object()):
        assert zdist.describe_pickled_exception(payload)  # something to say, nothing run
    assert not marker.exists()


def test_a_remote_winner_is_rechecked_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task: Task
) -> None:
    """Workers that call every config correct and fast: a config that is wrong here (its kernel
    multiplies instead of adding, when measured on this machine; still a reduction every config
    can lower) is not recorded as the best."""
    import autotune.measure as measure_module

    info = anchor_info(task)
    # the first config within the device's peak (faster ones are refused: see below), the others
    # claimed slower than anything runs here
    fast = task.flops / (cpu_peak_flops(1, host_target()["features"]) / 2)
    real = measure_module.measure
    wrong_ir = task.kernel_ir.replace("arith.addf", "arith.mulf")
    assert wrong_ir != task.kernel_ir
    calls: list[list[list[str]]] = []

    def wrong_here(task_, cands, **kwargs):
        calls.append(cands)
        return real(task_, cands, kernel_irs=[wrong_ir] * len(cands), **kwargs)

    class Lying:
        remote = True  # as DaskMeasurer
        target = host_target()
        device = None
        measure_kwargs: dict = {}

        def __call__(self, task_, cands):
            return [MeasureResult(costs=[fast if i == 0 else 10.0 * i]) for i in range(len(cands))]

    monkeypatch.setattr(measure_module, "measure", wrong_here)
    path = tmp_path / "remote.jsonl"
    with pytest.warns(UserWarning, match="failed the local correctness re-check"):
        result = tune_task(
            task,
            info,
            Database(path),
            3,
            tuner="random",
            batch=3,
            measurer=Lying(),
            progress=None,
        )
    records = [json.loads(s) for s in path.read_text().splitlines()]
    assert [r["error_kind"] for r in records] == ["wrong_result"] * 3
    assert all("remote success, local re-check failed: wrong_result" in r["error"] for r in records)
    assert result.best_config is None and result.best_gflops == 0.0
    assert Database(path).best(task.workload_key) is None
    assert len(calls) == 3  # each would have been the best so far

    # the same lies from a local measure function: nothing is re-checked (local tuning pays nothing)
    calls.clear()
    local = tmp_path / "local.jsonl"
    tune_task(
        task,
        info,
        Database(local),
        3,
        tuner="random",
        batch=3,
        measurer=LocalMeasurer(Lying().__call__),
        progress=None,
    )
    assert calls == []
    assert [json.loads(s)["error_kind"] for s in local.read_text().splitlines()] == [None] * 3

    # a correct config passes the re-check; slower ones after it are not re-checked
    def right_here(task_, cands, **kwargs):
        calls.append(cands)
        return real(task_, cands, **kwargs)

    monkeypatch.setattr(measure_module, "measure", right_here)
    path = tmp_path / "honest.jsonl"
    result = tune_task(
        task, info, Database(path), 3, tuner="random", batch=3, measurer=Lying(), progress=None
    )
    honest = [json.loads(s) for s in path.read_text().splitlines()]
    assert [r["error_kind"] for r in honest] == [None] * 3
    assert len(calls) == 1 and result.best_gflops > 0
    # the winner's record holds this machine's timing (beside the default's), not the claim
    assert [r["timed_on"] for r in honest] == ["tuner", "workers", "workers"]
    assert honest[0]["costs"] != [fast] and honest[0]["baseline_costs"]


# ----------------------------------------------------------------------------- forged timings


def tuner_scale_gflops(task: Task, records: list[dict]) -> float:
    """The best GFLOP/s of a task's records on this machine's scale: each success's time over
    its default's, times the least default timed here (the records timed by workers are ranked
    by their own ratio but set no scale)."""
    here = [min(r["baseline_costs"]) for r in records if r.get("timed_on") == "tuner"]
    best = min(
        min(r["costs"]) / min(r["baseline_costs"]) * min(here)
        for r in records
        if r["error_kind"] is None
    )
    return task.flops / best / 1e9


def test_a_timing_beyond_the_workers_peak_is_refused(client: Client, task: Task) -> None:
    """A worker that reports a cost faster than its device can run the task's FLOPs: the result
    is an implausible_timing failure naming the claim and the bound."""
    with DaskMeasurer(client, measure_kwargs=FAST) as m:
        peak = cpu_peak_flops(1, m.target["features"])  # one thread of the workers' CPU
        at_peak = task.flops / peak  # seconds per call at the bound
        claims = {
            "1 ns": MeasureResult(costs=[1e-3, 1e-9]),
            "beyond": MeasureResult(costs=[at_peak / 2]),
            "baseline beyond": MeasureResult(costs=[1e-3], baseline_costs=[at_peak / 2]),
            "within": MeasureResult(costs=[at_peak * 2], baseline_costs=[at_peak * 4]),
            "failed": MeasureResult(costs=[1e-9], error_kind="timeout", error="slow"),
        }

        def forge(task_, cands, kwargs):
            return [claims[c[0]] for c in cands]

        m._chunk_fn = forge
        results = dict(zip(claims, m(task, [[c] for c in claims]), strict=True))
    for name in ("1 ns", "beyond", "baseline beyond"):
        r = results[name]
        assert r.error_kind == IMPLAUSIBLE == "implausible_timing", (name, r)
        assert "beyond the device's peak (at most" in r.error and "GFLOP/s" in r.error, r.error
        assert r.costs == [] and r.baseline_costs == []
    assert "a baseline cost of" in results["baseline beyond"].error
    assert results["within"].ok and results["within"].costs == [at_peak * 2]
    assert results["failed"].error_kind == "timeout"  # a failure stays what it was
    assert m.peak_flops == peak


def test_a_worker_forging_its_timings_never_sets_the_best(
    tmp_path: Path, client: Client, task: Task
) -> None:
    """Workers that measure for real (correct outputs) but report forged costs: 1 ns (beyond
    any device) for the first config of each chunk, a plausible time 100x faster than the
    default for the others. The 1 ns claims are refused; every other claim would be the best,
    so each is measured again here: the best record holds this machine's timing, and the best
    GFLOP/s is this machine's, within the peak."""

    def forge(task_, cands, kwargs):  # runs on a worker
        from autotune.measure import MeasureResult, cpu_peak_flops, host_target

        fast = task_.flops / (cpu_peak_flops(1, host_target()["features"]) / 2)
        out = []
        for i, r in enumerate(zdist._measure_chunk(task_, cands, kwargs)):
            if r.ok and i == 0:
                r = MeasureResult([1e-9] * len(r.costs), None, "", r.build_s, r.run_s, [1e-9])
            elif r.ok:
                r = MeasureResult([fast], None, "", r.build_s, r.run_s, [100 * fast])
            out.append(r)
        return out

    info = anchor_info(task)
    path = tmp_path / "forged.jsonl"
    with DaskMeasurer(client, measure_kwargs=FAST, chunk_fn=forge) as m:
        peak = cpu_peak_flops(1, m.target["features"])
        forged = task.flops / (peak / 2)
        result = tune_task(
            task, info, Database(path), 8, tuner="random", batch=4, measurer=m, progress=None
        )
    records = [json.loads(s) for s in path.read_text().splitlines()]
    assert len(records) == 8  # every measurement is recorded, the refused ones too
    refused = [r for r in records if r["error_kind"] == IMPLAUSIBLE]
    assert len(refused) >= 2, [r["error"] for r in records]  # the first of each chunk
    assert all("beyond the device's peak" in r["error"] for r in refused)
    ok = [r for r in records if r["error_kind"] is None]
    assert ok, [r["error"] for r in records]
    for r in records:  # no forged number is anywhere a cost
        assert not {1e-9, forged, 100 * forged} & {*r["costs"], *r.get("baseline_costs", [])}, r
    assert all(r["timed_on"] == "tuner" and r["baseline_costs"] for r in ok)
    best = Database(path).best(task.workload_key)
    assert best is not None and best.timed_on == "tuner"
    assert result.best_config == best.config
    assert 0 < result.best_gflops < peak / 1e9
    assert result.best_gflops == pytest.approx(tuner_scale_gflops(task, records))


def test_workers_baselines_do_not_set_the_gflops_shown(tmp_path: Path, task: Task) -> None:
    """A worker that cannot set the best (its claims are slow) but reports its default as
    timed at the device's peak: comparable_costs would scale every paired record by that
    baseline; the tuner shows GFLOP/s on this machine's scale, from its own timings."""
    at_peak = task.flops / (cpu_peak_flops(1, host_target()["features"]) / 2)

    class SlowClaims:
        remote = True  # as DaskMeasurer
        target = host_target()
        device = None
        measure_kwargs = FAST

        def __call__(self, task_, cands):
            return [MeasureResult(costs=[1.0], baseline_costs=[at_peak]) for _ in cands]

    path = tmp_path / "baselines.jsonl"
    result = tune_task(
        task,
        anchor_info(task),
        Database(path),
        3,
        tuner="random",
        batch=3,
        measurer=SlowClaims(),
        progress=None,
    )
    records = [json.loads(s) for s in path.read_text().splitlines()]
    # the first success would be the best: measured here; the others are the workers' word
    assert [r["timed_on"] for r in records] == ["tuner", "workers", "workers"]
    best = Database(path).best(task.workload_key)
    assert best is not None and best.to_json() == records[0]
    # the best is the one timed here, scaled by its own default: its own GFLOP/s
    assert result.best_gflops == pytest.approx(task.flops / min(records[0]["costs"]) / 1e9)


def test_a_client_that_fails_to_start_lets_the_process_exit() -> None:
    """distributed leaves a client whose start raised to its __del__, which at exit waited
    2 x the timeout for an event loop already stopped, then printed a traceback; ours is closed
    when its start fails."""
    import subprocess

    script = (
        "import autotune.distributed as z\n"
        "try:\n"
        "    z._safe_client_class()('inproc://nothing', timeout=5, set_as_default=False)\n"
        "except Exception as e:\n"
        "    print('failed:', type(e).__name__)\n"
        "print('exiting')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,  # hang guard
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("failed: ") and "exiting" in r.stdout, r.stdout
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
