"""The thread-pool runtime generated parallel loops call (compiler/parallel_runtime.c): static
chunks that cover [0, n) exactly once, JIT-ed code resolving `zrt_parallel_for`, back-to-back and
nested calls, thread-count changes, fork, the message when no C compiler is there, and the trust
checks on its cache (private directory, SHA-256 of what is loaded, rebuild on mismatch).

Bodies are Python ctypes callbacks where the test records which thread ran what, and JIT-ed LLVM IR
(no GIL) where it hammers the pool.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from compiler import parallel_runtime as prt
from compiler.parallel_runtime import BODY, ParallelRuntimeError

IR = """
declare void @zrt_parallel_for(ptr, ptr, i64)

; out[i] = 2 * i for i in [b, e), ctx = double *out
define void @body(i64 %b, i64 %e, ptr %ctx) {
entry:
  %empty = icmp sge i64 %b, %e
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ %b, %entry ], [ %next, %loop ]
  %f = sitofp i64 %i to double
  %v = fmul double %f, 2.0
  %p = getelementptr double, ptr %ctx, i64 %i
  store double %v, ptr %p
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %e
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; *ctx += e - b (atomically), ctx = i64 *counter
define void @count(i64 %b, i64 %e, ptr %ctx) {
  %d = sub i64 %e, %b
  %old = atomicrmw add ptr %ctx, i64 %d seq_cst
  ret void
}

define void @run(ptr %out, i64 %n) {
  call void @zrt_parallel_for(ptr @body, ptr %out, i64 %n)
  ret void
}
"""


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    return prt.load()


@pytest.fixture(autouse=True)
def restore_threads(lib: ctypes.CDLL) -> Iterator[None]:
    before = lib.zrt_get_num_threads()
    yield
    lib.zrt_set_num_threads(before)


@pytest.fixture(scope="module")
def jit(lib: ctypes.CDLL) -> Iterator[dict[str, int]]:
    """Addresses of @body, @count and @run, compiled by MCJIT as the backend does."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=llvm.get_host_cpu_name(), opt=2, codemodel="jitdefault", jit=True
    )
    mod = llvm.parse_assembly(f'target triple = "{llvm.get_process_triple()}"\n' + IR)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    yield {name: engine.get_function_address(name) for name in ("body", "count", "run")}
    engine.close()


def record(lib: ctypes.CDLL, n: int) -> list[tuple[int, int, int]]:
    """zrt_parallel_for over [0, n) with a body that logs (begin, end, OS thread id)."""
    log: list[tuple[int, int, int]] = []
    guard = threading.Lock()

    def body(b: int, e: int, _ctx: int | None) -> None:
        with guard:
            log.append((b, e, threading.get_native_id()))

    lib.zrt_parallel_for(BODY(body), None, n)
    return log


def assert_covers(chunks: list[tuple[int, int, int]] | list[tuple[int, int]], n: int) -> None:
    """Disjoint, non-empty, contiguous chunks of [0, n), each at most one longer than another."""
    spans = sorted((c[0], c[1]) for c in chunks)
    assert all(b < e for b, e in spans), spans
    assert [b for b, _ in spans] == [0] + [e for _, e in spans[:-1]], spans
    assert spans[-1][1] == n, spans
    sizes = [e - b for b, e in spans]
    assert max(sizes) - min(sizes) <= 1, sizes


def run_with_deadline(fn: Callable[[], None], seconds: float = 60.0) -> None:
    """Run fn in a daemon thread: a deadlock fails the test instead of hanging the session."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s: deadlock or lost wake-up"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("n", [0, 1, 3, 7, 1000])
def test_static_chunks(lib: ctypes.CDLL, threads: int, n: int) -> None:
    lib.zrt_set_num_threads(threads)
    log = record(lib, n)
    assert len(log) == min(threads, n)
    if n:
        assert_covers(log, n)
    if threads > 1 and n > 1:
        assert len({tid for _, _, tid in log}) > 1
        caller_chunk = [c for c in log if c[0] == 0][0]
        assert caller_chunk[2] == threading.get_native_id()  # chunk 0 runs in the caller


def test_jit_code_calls_the_pool(lib: ctypes.CDLL, jit: dict[str, int]) -> None:
    # the JIT resolved the declaration to the library's function, not to a copy of it
    assert (
        llvm.address_of_symbol("zrt_parallel_for")
        == ctypes.cast(lib.zrt_parallel_for, ctypes.c_void_p).value
    )
    lib.zrt_set_num_threads(2)
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(jit["run"])
    n = 100_000
    out = np.full(n, -1.0)
    run(out.ctypes.data, n)
    np.testing.assert_array_equal(out, 2.0 * np.arange(n))


def test_many_back_to_back_calls(lib: ctypes.CDLL, jit: dict[str, int]) -> None:
    count = BODY(jit["count"])
    counter = ctypes.c_int64(0)

    def hammer() -> None:
        total = 0
        for k in range(3000):
            if k % 1000 == 0:
                lib.zrt_set_num_threads(2 + (k // 1000) % 3)
            n = k % 9
            lib.zrt_parallel_for(count, ctypes.byref(counter), n)
            total += n
            assert counter.value == total, k  # every chunk finished before the call returned

    run_with_deadline(hammer)


def test_two_callers_at_once(lib: ctypes.CDLL, jit: dict[str, int]) -> None:
    """While one thread uses the pool the other runs its loops serially: both finish, both right."""
    lib.zrt_set_num_threads(3)
    count = BODY(jit["count"])
    counters = [ctypes.c_int64(0), ctypes.c_int64(0)]

    def caller(c: ctypes.c_int64) -> None:
        for _ in range(500):
            lib.zrt_parallel_for(count, ctypes.byref(c), 17)

    def both() -> None:
        threads = [threading.Thread(target=caller, args=(c,)) for c in counters]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run_with_deadline(both)
    assert [c.value for c in counters] == [500 * 17, 500 * 17]


def test_nested_call_runs_serially(lib: ctypes.CDLL) -> None:
    lib.zrt_set_num_threads(3)
    inner_logs: list[tuple[int, int, list[tuple[int, int]]]] = []
    guard = threading.Lock()

    def outer(b: int, e: int, _ctx: int | None) -> None:
        seen: list[tuple[int, int]] = []
        inner = BODY(lambda ib, ie, _c: seen.append((ib, ie)))
        lib.zrt_parallel_for(inner, None, 50)
        with guard:
            inner_logs.append((b, e, seen))

    run_with_deadline(lambda: lib.zrt_parallel_for(BODY(outer), None, 10))
    assert_covers([(b, e) for b, e, _ in inner_logs], 10)
    for _, _, seen in inner_logs:
        assert seen == [(0, 50)]  # the whole inner loop, in the thread that ran the outer chunk


def test_thread_count_changes_between_calls(lib: ctypes.CDLL) -> None:
    for threads in [2, 4, 1, 3, 3, 2, 4, 1, 2]:
        lib.zrt_set_num_threads(threads)
        log = record(lib, 100)
        assert len(log) == threads
        assert_covers(log, 100)
        assert len({tid for _, _, tid in log}) == threads


def test_set_get_num_threads(lib: ctypes.CDLL) -> None:
    prt.set_num_threads(3)
    assert prt.get_num_threads() == 3
    prt.set_num_threads(0)
    assert prt.get_num_threads() == 1
    prt.set_num_threads(-5)
    assert prt.get_num_threads() == 1
    assert all(hasattr(lib, name) for name in prt.SYMBOLS)


def test_idle_workers_sleep(lib: ctypes.CDLL) -> None:
    lib.zrt_set_num_threads(4)
    record(lib, 100)
    time.sleep(0.05)  # far past the spin
    cpu = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - cpu < 0.05  # three spinning workers would use ~0.9 s


@pytest.mark.parametrize("env, expected", [("3", 3), (None, 1), ("zero", 1), ("-2", 1)])
def test_initial_count_from_environment(env: str | None, expected: int) -> None:
    """In a fresh process, which also shows the module imports no xDSL (the tuner's runner)."""
    code = (
        "import sys; from compiler import parallel_runtime as p; "
        "print(p.get_num_threads(), 'xdsl' in sys.modules)"
    )
    environ = {k: v for k, v in os.environ.items() if k != "ZIGGURAT_NUM_THREADS"}
    if env is not None:
        environ["ZIGGURAT_NUM_THREADS"] = env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, "-c", code], env=environ, cwd=root, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(expected), "False"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_pool_works_after_fork(lib: ctypes.CDLL) -> None:
    """A forked child (parallel_compile's workers) has none of the parent's worker threads."""
    lib.zrt_set_num_threads(3)
    record(lib, 10)  # the parent's workers exist
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if a parallel loop completes and is right
        code = 1
        try:
            log = record(lib, 10)
            assert_covers(log, 10)
            code = 0 if len(log) == 3 else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120  # a guard against a hang, not a speed limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in zrt_parallel_for")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


def test_cached_build_is_reused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path))
    path = prt.library_path()
    assert os.path.dirname(path) == str(tmp_path)
    mtime = os.stat(path).st_mtime_ns
    assert prt.library_path() == path and os.stat(path).st_mtime_ns == mtime
    assert os.listdir(tmp_path) == [os.path.basename(path)]  # no temp files left behind


def test_missing_compiler_says_what_to_install(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "zg-no-such-cc")
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path))
    with pytest.raises(ParallelRuntimeError) as info:
        prt.library_path()
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "zg-no-such-cc" in message and "install gcc" in message and "\n" not in message


def test_failing_compiler_shows_its_stderr(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\necho 'fakecc: boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ParallelRuntimeError, match="fakecc: boom") as info:
        prt.library_path()
    assert "exit code 3" in str(info.value) and "\n" not in str(info.value)
    assert os.listdir(tmp_path / "cache") == []  # the temp file was removed


# -- cache trust: the library runs in every process that loads it ---------------------------

REPO = Path(__file__).resolve().parents[2]

PLANTED_C = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(%s, "w");
    if (f) { fputs("planted code ran", f); fclose(f); }
}
"""


def load_in_subprocess(cache: Path) -> subprocess.CompletedProcess[str]:
    """Load the runtime from `cache` in a fresh process (a process loads it only once)."""
    code = (
        "from compiler import parallel_runtime as p; p.set_num_threads(2); "
        "print(p.get_num_threads())"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "ZIGGURAT_CACHE_DIR": str(cache)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_trusted_build(cache: Path) -> Path:
    """The cache holds one library, private, whose bytes hash to the SHA-256 in its name."""
    (name,) = os.listdir(cache)
    path = cache / name
    assert not path.is_symlink() and path.is_file()
    assert os.stat(path).st_mode & 0o077 == 0
    assert name.endswith(f"-{hashlib.sha256(path.read_bytes()).hexdigest()}.so")
    return path


def compile_planted(tmp_path: Path, marker: Path) -> Path:
    """A shared library whose constructor writes `marker` as soon as it is loaded."""
    src = tmp_path / "planted.c"
    src.write_text(PLANTED_C % ('"' + str(marker).replace("\\", "\\\\") + '"'))
    out = tmp_path / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True, timeout=120)
    return out


def test_planted_library_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library put at the exact cache path, with our owner and mode, is caught by its hash."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(cache))
    path = Path(prt.library_path())
    marker = tmp_path / "marker"
    planted = compile_planted(tmp_path, marker).read_bytes()
    path.write_bytes(planted)  # same name, owner and mode: only the content differs
    r = load_in_subprocess(cache)
    assert not marker.exists(), "the planted library's constructor ran"
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2"]
    assert assert_trusted_build(cache).read_bytes() != planted


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_corrupt_cached_library_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path))
    path = Path(prt.library_path())
    good = path.read_bytes()
    path.write_bytes(
        {"truncated": good[: len(good) // 2], "garbage": b"\x7fELF junk", "empty": b""}[damage]
    )
    r = load_in_subprocess(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2"]
    assert assert_trusted_build(tmp_path) == path and path.read_bytes() == good


def test_symlinked_or_shared_library_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right bytes are not enough: a symlink, or a file others may write, is rebuilt."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(cache))
    path = Path(prt.library_path())
    elsewhere = tmp_path / "copy.so"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)  # same hash: only the symlink check rejects it
    assert prt.library_path() == str(path)
    assert_trusted_build(cache)
    path.chmod(0o722)
    assert prt.library_path() == str(path)
    assert_trusted_build(cache)


def test_created_cache_dirs_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(cache))
    old_umask = os.umask(0o022)  # mkdir's default would give 0755
    try:
        prt.library_path()
    finally:
        os.umask(old_umask)
    for d in (tmp_path / "a", tmp_path / "a" / "b", cache):
        assert os.stat(d).st_mode & 0o777 == 0o700, d
    assert_trusted_build(cache)


def test_shared_cache_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(cache))
    with pytest.raises(ParallelRuntimeError) as info:
        prt.library_path()
    message = str(info.value)
    assert str(cache) in message and "writable by group or others (mode 0o777)" in message
    assert "chmod 700" in message and "ZIGGURAT_CACHE_DIR" in message and "\n" not in message
    assert os.listdir(cache) == []  # nothing built, nothing loaded
    r = load_in_subprocess(cache)  # and `run --threads N` gets one error line, not planted code
    assert r.returncode != 0 and "writable by group or others" in r.stderr


def test_cache_dir_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(ParallelRuntimeError, match="is owned by uid .*, not by you") as info:
        prt.library_path()
    assert str(tmp_path) in str(info.value)
