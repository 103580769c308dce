"""compiler/package/loader.py: load_package gives the results of the model that was saved.

Packages are loaded and run in a fresh process that cannot import xDSL, ONNX, onnxruntime, the
passes, the dialects or the tuner (tests/support/packages.py), and compared with onnxruntime;
zoo:mlp, the small CNN at two threads (its code calls the thread pool, which the loader loads)
and ResNet-18 (also exported as a shared library and run from C). Two packages compiled in two processes (their weights bound under the same symbol
names) load side by side. A manifest that names another backend, a main function of the wrong
type or malformed inputs is refused with one message naming the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler import parallel_runtime, zoo
from compiler.errors import InputError
from compiler.model import CompiledModel, compile_model
from compiler.package import PackageError, load_package
from tests.support import REPO_ROOT
from tests.support.packages import rewrite, run_isolated, run_python

TOL = 1e-4


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def assert_matches(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape
        np.testing.assert_allclose(got[name], value, rtol=TOL, atol=TOL)


def test_the_isolated_process_cannot_import_the_compiler() -> None:
    proc = run_python("import xdsl")
    assert proc.returncode != 0 and "importing xdsl is refused" in proc.stderr
    proc = run_python("from compiler.model import compile_model")
    assert proc.returncode != 0 and "is refused in this process" in proc.stderr


def test_mlp_package_runs_without_the_compiler(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    model, compiled, path = mlp
    feeds = zoo.random_inputs(model, seed=1)
    got = run_isolated(path, feeds, tmp_path)
    assert_matches(got, reference(model, feeds))
    np.testing.assert_array_equal(got["output"], compiled.run(feeds)["output"])  # same code


def test_two_thread_package_runs_on_the_thread_pool(
    cnn2: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    model, _, path = cnn2
    feeds = zoo.random_inputs(model, seed=2)
    want = reference(model, feeds)
    assert_matches(run_isolated(path, feeds, tmp_path), want)  # two threads, as saved
    assert_matches(run_isolated(path, feeds, tmp_path, threads=1), want)


def test_two_thread_package_in_this_process(
    cnn2: tuple[onnx.ModelProto, CompiledModel, Path],
) -> None:
    model, _, path = cnn2
    loaded = load_package(path)
    assert loaded.threads == 2 and loaded.program.parallel
    feeds = zoo.random_inputs(model, seed=3)
    before = parallel_runtime.get_num_threads()
    try:
        assert_matches(loaded.run(feeds), reference(model, feeds))
        assert parallel_runtime.get_num_threads() == 2
    finally:
        parallel_runtime.set_num_threads(before)


def test_resnet18_package_in_python_and_from_c(tmp_path: Path) -> None:
    """ResNet-18, compiled once: its package run by the lean runtime in a process without the
    compiler, then exported as a shared library and run by a C program built with gcc."""
    from tests.compiler.package.test_c_api import GCC, run_c

    model = zoo.resnet18()
    path = tmp_path / "resnet18.zpkg"
    compile_model(model).save(path)
    feeds = zoo.random_inputs(model, seed=4)
    want = reference(model, feeds)
    assert_matches(run_isolated(path, feeds, tmp_path), want)
    if GCC is None:
        pytest.skip("gcc is not installed: the C half of this test did not run")
    (tmp_path / "c").mkdir()
    got, _ = run_c(path, model, feeds, tmp_path / "c")
    assert_matches(got, want)


def test_packages_from_two_processes_load_side_by_side(tmp_path: Path) -> None:
    """Both processes name their first model's weights `__zg0_...`: each package's code must
    still read its own weights, whichever was loaded last."""
    paths = [tmp_path / f"mlp{seed}.zpkg" for seed in (0, 1)]
    for seed, path in enumerate(paths):
        code = (
            "import sys\nfrom compiler import zoo\nfrom compiler.model import compile_model\n"
            f"compile_model(zoo.mlp(seed={seed})).save(sys.argv[1])\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
    loaded = [load_package(p) for p in paths]
    assert set(loaded[0].program.bound_constants) == set(loaded[1].program.bound_constants)
    feeds = zoo.random_inputs(zoo.mlp(), seed=5)
    for seed, model in enumerate(loaded):
        assert_matches(model.run(feeds), reference(zoo.mlp(seed=seed), feeds))


def test_one_package_loaded_twice(mlp_package: Path) -> None:
    first, second = load_package(mlp_package), load_package(mlp_package)
    feeds = zoo.random_inputs(zoo.mlp(), seed=6)
    np.testing.assert_array_equal(first.run(feeds)["output"], second.run(feeds)["output"])
    second.close()
    assert_matches(first.run(feeds), reference(zoo.mlp(), feeds))


def test_another_backend_is_refused(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", lambda m: m.update(backend="rocm"))
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert (
        str(e.value) == f"{path}: is for backend 'rocm'; this ziggurat loads llvm-cpu, opencl, cuda"
    )


def test_a_main_of_another_type_is_refused(mlp_package: Path, tmp_path: Path) -> None:
    def extra_input(m: dict) -> None:
        m["inputs"].append({"name": "x", "shape": [1], "dtype": "float32"})

    path = rewrite(mlp_package, tmp_path / "m.zpkg", extra_input)
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == (
        f"{path}: its main function has type (('ptr', 'ptr'), None), not one pointer per input "
        "and output"
    )


def test_an_object_dtype_is_refused(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package, tmp_path / "m.zpkg", lambda m: m["inputs"][0].update(dtype="object")
    )
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == (
        f"{path}: manifest.json: bad `inputs` entry (dtype 'object' is not a bool, integer or "
        "float type)"
    )


def test_bad_thread_count(mlp_package: Path) -> None:
    with pytest.raises(InputError, match=r"^threads must be at least 1 \(got 0\)$"):
        load_package(mlp_package, threads=0)
