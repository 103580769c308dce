"""The compile cache (compiler/compile_cache.py): a second compile of the same model is a load of
its package; anything the code depends on changes the key; bad entries and untrusted
directories are never used; the size limit evicts the least recently used entries; concurrent
compiles leave one whole entry. Every test keeps its cache under tmp_path (ZIGGURAT_CACHE_DIR).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from compiler import compile_cache, zoo
from compiler import model as model_api
from compiler.cli.main import main
from compiler.model import CompiledModel
from compiler.package import LoadedModel, load_package
from tests.support.references import assert_outputs_match, onnxruntime_run
from tests.support.symbolic_matmul import symbolic_matmul, weight

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory for this test (the entries land in its `packages`)."""
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ZIGGURAT_NO_CACHE", raising=False)
    monkeypatch.delenv("ZIGGURAT_CACHE_MAX_MB", raising=False)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def mlp() -> onnx.ModelProto:
    return zoo.builtin("mlp")


def entries(cache: Path) -> list[Path]:
    d = cache / "packages"
    return sorted(d.glob("*.zpkg")) if d.is_dir() else []


def store(cache: Path) -> Path:
    """Where the entries keep their weights, one file per distinct content."""
    return cache / "packages" / "weights"


def weights(cache: Path) -> list[Path]:
    return sorted(store(cache).glob("*.npy")) if store(cache).is_dir() else []


def model_files(tmp_path: Path, mlp: onnx.ModelProto) -> tuple[Path, Path]:
    """The model as an .onnx file and random inputs for it as an .npz file, for the CLI."""
    path, inputs = tmp_path / "mlp.onnx", tmp_path / "in.npz"
    onnx.save(mlp, path)
    save: Callable[..., None] = np.savez  # numpy's stub types **kwds as its own options
    save(inputs, **zoo.random_inputs(mlp))
    return path, inputs


def no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on compile_model fails the test: what follows must come from the cache."""

    def refuse(*args, **kwargs):
        raise AssertionError("compile_model was called: not a cache hit")

    monkeypatch.setattr(model_api, "compile_model", refuse)


def count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count calls of compile_model (which still compiles)."""
    calls: list[int] = []
    real = model_api.compile_model

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(model_api, "compile_model", counted)
    return calls


def test_second_compile_is_a_hit_with_the_same_results(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = compile_cache.cached_compile(mlp)
    assert isinstance(first, CompiledModel) and len(entries(cache)) == 1
    no_compiling(monkeypatch)
    second = compile_cache.cached_compile(mlp)
    assert isinstance(second, LoadedModel) and second.path == str(entries(cache)[0])
    assert second.input_names == first.input_names
    assert second.output_names == first.output_names
    assert first.notes and compile_cache.model_notes(second) == first.notes  # memory plan & co.
    feeds = zoo.random_inputs(mlp)
    ours = second.run(feeds)
    for name, value in first.run(feeds).items():
        np.testing.assert_array_equal(ours[name], value)
    assert_outputs_match(ours, onnxruntime_run(mlp, feeds), tol=1e-4)
    stat = os.stat(cache / "packages")
    assert stat.st_mode & 0o777 == 0o700 and stat.st_uid == os.geteuid()


def test_what_the_code_depends_on_changes_the_key(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto
) -> None:
    key = compile_cache.cache_key
    base = key(mlp)
    assert key(mlp) == base  # deterministic
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp, path)
    assert key(path) == base  # the model's bytes, not how it was given
    changed = onnx.ModelProto()
    changed.CopyFrom(mlp)
    w = numpy_helper.to_array(changed.graph.initializer[0]).copy()
    w.flat[0] += 1.0
    name = changed.graph.initializer[0].name
    changed.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, name))
    db = tmp_path / "tune.jsonl"
    db.write_text('{"a": 1}\n')
    with_db = key(mlp, schedules=[f'autotune{{db="{db}"}}'])
    others = [
        key(changed),
        key(mlp, {"input": [8, 64]}),
        key(mlp, threads=2),
        key(mlp, layout="NCHW"),
        key(mlp, optimize=False),
        key(mlp, schedules=["tile{sizes=4,4}"]),
        with_db,
    ]
    assert len({base, *others}) == len(others) + 1
    db.write_text('{"a": 1}\n{"a": 2}\n')  # same pass string, new records: a new key
    assert key(mlp, schedules=[f'autotune{{db="{db}"}}']) != with_db


def test_external_data_is_part_of_the_key(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto
) -> None:
    """A file without external data is keyed by its bytes (no parse on a warm hit); one with
    external data by the model with its data read in: editing the data file changes the key."""
    path = tmp_path / "mlp.onnx"
    external = onnx.ModelProto()
    external.CopyFrom(mlp)  # onnx.save moves the data out of the proto it is given
    onnx.save(external, path, save_as_external_data=True, location="mlp.data", size_threshold=0)
    before = compile_cache.cache_key(path)
    assert before == compile_cache.cache_key(path)
    data = tmp_path / "mlp.data"
    raw = bytearray(data.read_bytes())
    raw[0] ^= 0xFF
    data.write_bytes(bytes(raw))
    assert compile_cache.cache_key(path) != before


def test_a_different_option_misses(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_cache.cached_compile(mlp)
    calls = count_compiles(monkeypatch)
    two = compile_cache.cached_compile(mlp, threads=2)
    assert calls == [1] and isinstance(two, CompiledModel) and len(entries(cache)) == 2
    assert isinstance(compile_cache.cached_compile(mlp, threads=2), LoadedModel)
    assert calls == [1]


def test_a_tampered_entry_is_discarded_and_recompiled(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_cache.cached_compile(mlp)
    (entry,) = entries(cache)
    weight = max(weights(cache), key=lambda p: p.stat().st_size)
    data = bytearray(weight.read_bytes())
    data[200] ^= 0xFF  # inside the weight: its SHA-256 no longer matches
    weight.write_bytes(bytes(data))
    calls = count_compiles(monkeypatch)
    with pytest.warns(UserWarning, match="discarding a bad compile-cache entry.*SHA-256"):
        again = compile_cache.cached_compile(mlp)
    assert calls == [1] and isinstance(again, CompiledModel)
    load_package(entry, shared_parts=store(cache))  # whole again, the weight rewritten too
    feeds = zoo.random_inputs(mlp)
    assert_outputs_match(again.run(feeds), onnxruntime_run(mlp, feeds), tol=1e-4)


def test_garbage_at_an_entry_is_discarded(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_cache.cached_compile(mlp)
    (entry,) = entries(cache)
    entry.write_bytes(b"not a zip")
    with pytest.warns(UserWarning, match="discarding a bad compile-cache entry"):
        assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    assert isinstance(load_package(entry, shared_parts=store(cache)), LoadedModel)


def test_eviction_drops_the_least_recently_used(tmp_path: Path) -> None:
    for i, name in enumerate(["a", "b", "c"]):
        (tmp_path / f"{name}.zpkg").write_bytes(bytes(1000))
        os.utime(tmp_path / f"{name}.zpkg", (1000 + i, 1000 + i))
    os.utime(tmp_path / "a.zpkg", (5000, 5000))  # a was used last: b is now the oldest
    (tmp_path / ".zpkg-dead.tmp").write_bytes(bytes(10))
    os.utime(tmp_path / ".zpkg-dead.tmp", (0, 0))  # left by a writer that died long ago
    compile_cache.evict(tmp_path, 2500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zpkg", "c.zpkg"]
    compile_cache.evict(tmp_path, 1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zpkg"]


def test_a_hit_marks_its_entry_used_and_the_cache_stays_under_its_limit(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_cache.cached_compile(mlp)
    (entry,) = entries(cache)
    os.utime(entry, (1000, 1000))
    compile_cache.cached_compile(mlp)
    assert entry.stat().st_mtime > 1000
    size = entry.stat().st_size
    shared = sum(p.stat().st_size for p in weights(cache))
    limit = 1.5 * size + shared  # room for one entry and the weights both would keep
    monkeypatch.setenv("ZIGGURAT_CACHE_MAX_MB", str(limit / 2**20))
    compile_cache.cached_compile(mlp, threads=2)
    (kept,) = entries(cache)
    assert kept != entry
    assert sum(p.stat().st_size for p in [*entries(cache), *weights(cache)]) <= limit
    assert isinstance(compile_cache.cached_compile(mlp, threads=2), LoadedModel)


def test_the_switches_bypass_the_cache(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(compile_cache.cached_compile(mlp, cache=False), CompiledModel)
    monkeypatch.setenv("ZIGGURAT_NO_CACHE", "1")
    assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    assert entries(cache) == []
    monkeypatch.delenv("ZIGGURAT_NO_CACHE")
    path, inputs = model_files(tmp_path, mlp)
    argv = ["run", str(path), "--inputs", str(inputs), "--output", str(tmp_path / "o.npz")]
    assert main([*argv, "--no-cache"]) == 0
    assert entries(cache) == []


def test_the_cli_run_fills_the_cache_then_hits_it(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, inputs = model_files(tmp_path, mlp)
    argv = ["run", str(path), "--inputs", str(inputs), "--output"]
    assert main([*argv, str(tmp_path / "1.npz")]) == 0
    assert len(entries(cache)) == 1
    no_compiling(monkeypatch)
    assert main([*argv, str(tmp_path / "2.npz")]) == 0
    np.testing.assert_array_equal(
        np.load(tmp_path / "1.npz")["output"], np.load(tmp_path / "2.npz")["output"]
    )


def test_cli_compile_to_a_package_fills_the_cache_then_copies_the_entry(
    tmp_path: Path,
    cache: Path,
    mlp: onnx.ModelProto,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _ = model_files(tmp_path, mlp)
    first, second = tmp_path / "1.zpkg", tmp_path / "2.zpkg"
    assert main(["compile", str(path), "-o", str(first)]) == 0
    (entry,) = entries(cache)
    no_compiling(monkeypatch)
    assert main(["compile", str(path), "-o", str(second), "-v"]) == 0
    assert "(from the compile cache)" in capsys.readouterr().err
    assert second.read_bytes() == first.read_bytes()  # the entry, its weights put back in
    assert os.stat(second).st_mode & 0o777 == 0o644
    feeds = zoo.random_inputs(mlp)
    a, b = load_package(first).run(feeds), load_package(second).run(feeds)
    for name, value in a.items():
        np.testing.assert_array_equal(b[name], value)


def test_a_bad_size_limit_is_one_error_line(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    path, inputs = model_files(tmp_path, mlp)
    monkeypatch.setenv("ZIGGURAT_CACHE_MAX_MB", "lots")
    assert main(["run", str(path), "--inputs", str(inputs), "--output", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ziggurat: error: ZIGGURAT_CACHE_MAX_MB must be a size in megabytes")
    assert err.count("\n") == 1 and "(got 'lots')" in err and entries(cache) == []


def test_a_shared_cache_directory_is_not_used(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    (cache / "packages").mkdir(parents=True, mode=0o700)
    cache.chmod(0o777)
    with pytest.warns(
        UserWarning, match="not using the compile cache.*writable by group or others"
    ):
        assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    cache.chmod(0o700)
    (cache / "packages").chmod(0o775)
    with pytest.warns(
        UserWarning, match="not using the compile cache.*writable by group or others"
    ):
        assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    assert entries(cache) == []
    (cache / "packages").chmod(0o700)
    store(cache).mkdir(mode=0o700)
    store(cache).chmod(0o777)  # where the weights would go
    with pytest.warns(UserWarning, match="not using the compile cache.*weights.*writable by group"):
        assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    assert entries(cache) == [] and weights(cache) == []


def test_a_cache_directory_of_another_user_is_not_used(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(cache).st_uid + 1)
    with pytest.warns(UserWarning, match="not using the compile cache.*owned by uid .*not by you"):
        assert isinstance(compile_cache.cached_compile(mlp), CompiledModel)
    assert entries(cache) == []


def test_gpu_targets_bypass_the_cache(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def gpu_compile(*args, **kwargs) -> str:
        seen.append(args[2])
        return "gpu"

    monkeypatch.setattr(model_api, "compile_model", gpu_compile)
    assert compile_cache.cached_compile(mlp, target="opencl") == "gpu"
    assert seen == ["opencl"] and not cache.exists()


def test_concurrent_runs_of_one_model_leave_one_whole_entry(
    tmp_path: Path, cache: Path, mlp: onnx.ModelProto
) -> None:
    path, inputs = model_files(tmp_path, mlp)
    feeds = zoo.random_inputs(mlp)  # the same (seed 0) as in the file
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZIGGURAT_COMPILE_JOBS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "compiler.cli", "run", str(path), "--inputs", str(inputs)]
            + ["--output", str(tmp_path / f"{i}.npz")],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "warning" not in err and "Traceback" not in err
    (entry,) = entries(cache)
    assert sorted(os.listdir(cache / "packages")) == [entry.name, "weights"]
    assert all(p.suffix == ".npy" for p in store(cache).iterdir())  # no temporary file left
    assert isinstance(load_package(entry, shared_parts=store(cache)), LoadedModel)
    ref = onnxruntime_run(mlp, feeds)
    for i in range(4):
        out = np.load(tmp_path / f"{i}.npz")
        assert_outputs_match({"output": out["output"]}, ref, tol=1e-4)


def test_an_entry_compiled_with_other_options_is_discarded(
    cache: Path, mlp: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_cache.cached_compile(mlp)
    (entry,) = entries(cache)
    other = entry.with_name(compile_cache.cache_key(mlp, layout="NCHW") + ".zpkg")
    other.write_bytes(entry.read_bytes())  # a whole package, but under another model's key
    other.chmod(0o644)
    calls = count_compiles(monkeypatch)
    with pytest.warns(UserWarning, match="records compile options"):
        compile_cache.cached_compile(mlp, layout="NCHW")
    assert calls == [1]
    loaded = load_package(other, shared_parts=store(cache))
    assert loaded.manifest["compile_options"]["layout"] == "NCHW"


def test_the_sizes_of_a_model_store_their_weights_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = symbolic_matmul(3)
    w = weight(model)
    for batch in (1, 5, 9):
        compile_cache.cached_compile(model, {"x": [batch, 64]})
    assert len(entries(cache)) == 3
    (stored,) = weights(cache)  # w, once for all three
    assert stored.stat().st_size > w.nbytes
    assert all(p.stat().st_size < w.nbytes for p in entries(cache))  # code and manifest only
    no_compiling(monkeypatch)
    for batch in (1, 5, 9):
        hit = compile_cache.cached_compile(model, {"x": [batch, 64]})
        assert isinstance(hit, LoadedModel)
        x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
        np.testing.assert_allclose(hit.run({"x": x})["y"], x @ w, rtol=1e-5, atol=1e-5)


def test_eviction_keeps_the_weights_a_remaining_entry_lists(cache: Path) -> None:
    model = symbolic_matmul(3)
    for batch in (1, 5):
        compile_cache.cached_compile(model, {"x": [batch, 64]})
    packages = cache / "packages"
    old, new = entries(cache)
    os.utime(old, (1000, 1000))
    orphan = store(cache) / f"{'0' * 64}.npy"  # listed by no entry, written long ago
    orphan.write_bytes(bytes(100))
    os.utime(orphan, (1000, 1000))
    (stored,) = (p for p in weights(cache) if p != orphan)
    limit = new.stat().st_size + stored.stat().st_size  # one entry and its weights
    compile_cache.evict(packages, limit)
    assert entries(cache) == [new] and weights(cache) == [stored]
    compile_cache.evict(packages, 0)
    assert entries(cache) == [] and weights(cache) == []
