"""Who may connect: the client's TLS files loaded and checked (`tls_security`), scheduler
addresses refused when they would expose the workers or the tuner (`check_address`), and a
loopback address with nothing listening refused at once (`probe_address`). Cluster setup policy,
apart from the transport and the measuring."""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
from typing import Any

from autotune.distributed.errors import DaskSetupError, _import_distributed


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
