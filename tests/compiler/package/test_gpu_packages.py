"""GPU packages (compiler/package/gpu.py) and the backend seam (compiler/backends/registry.py).

An OpenCL package of zoo:small-cnn loads and runs in a process that cannot import xDSL, ONNX or
the passes and agrees with onnxruntime (and exactly with the model it was saved from); the CLI
round trip `ziggurat compile --target opencl -o X.zpkg` / `ziggurat run X.zpkg` does too. A CUDA
package is written on this machine whether or not it has a GPU (nvcc makes the PTX, ptxas checks
it); loading it where CUDA cannot run is refused, naming why. Refused too: a package for
another target than the one asked for, a backend whose target names another API, an altered
kernel source, a launch plan that does not fit the manifest. OpenCL tests skip without an
OpenCL device, CUDA ones without nvcc (or, to run, without a CUDA GPU), each with the reason.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.backends.gpu.cuda_check import check_ptx, nvcc_path, ptxas_path
from compiler.backends.gpu.plan import plan_from_json, plan_to_json
from compiler.backends.registry import BACKENDS, PACKAGE_BACKENDS
from compiler.cli import common as cli
from compiler.errors import CompileError
from compiler.model import TARGETS, CompiledModel, compile_model
from compiler.package import PackageError, load_package
from compiler.package import gpu as gpu_package
from tests.support.cli import run_ziggurat as ziggurat
from tests.support.packages import manifest, members, rewrite, run_isolated, run_python
from tests.support.references import onnxruntime_run

OPENCL = gpu_package.unavailable_reason("opencl")
CUDA = gpu_package.unavailable_reason("cuda")
needs_opencl = pytest.mark.skipif(OPENCL is not None, reason=f"OpenCL: {OPENCL}")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")


def assert_close(ours: dict[str, np.ndarray], refs: list[np.ndarray]) -> None:
    """Within 1e-4 of the output's scale, as tests/compiler/backends/gpu/test_models_gpu.py."""
    assert len(ours) == len(refs)
    for o, r in zip(ours.values(), refs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        scale = max(float(np.max(np.abs(r))), 1e-3)
        assert float(np.max(np.abs(o - r))) <= 1e-4 * scale


@pytest.fixture(scope="module")
def opencl_cnn(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[onnx.ModelProto, CompiledModel, Path]:
    """zoo:small-cnn compiled for this machine's OpenCL device and saved."""
    if OPENCL is not None:
        pytest.skip(f"OpenCL: {OPENCL}")
    model = zoo.builtin("small-cnn")
    compiled = compile_model(model, target="opencl")
    path = tmp_path_factory.mktemp("gpu") / "cnn-opencl.zpkg"
    compiled.save(path)
    return model, compiled, path


@pytest.fixture(scope="module")
def cuda_mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, Path]:
    """zoo:mlp compiled for CUDA without loading it (no GPU needed) and saved."""
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed: CUDA C cannot be compiled to PTX here")
    model = zoo.builtin("mlp")
    path = tmp_path_factory.mktemp("gpu") / "mlp-cuda.zpkg"
    compile_model(model, target="cuda", load=False).save(path)
    return model, path


def test_one_list_of_targets() -> None:
    assert TARGETS == tuple(BACKENDS) == cli.TARGETS == ("cpu", "opencl", "cuda")
    assert set(PACKAGE_BACKENDS) == {"llvm-cpu", "opencl", "cuda"}
    assert [b.cached for b in BACKENDS.values()] == [True, False, False]


def test_the_isolated_process_cannot_import_the_compiler() -> None:
    proc = run_python("import onnx")
    assert proc.returncode != 0 and "importing onnx is refused" in proc.stderr


@needs_opencl
def test_opencl_package_runs_without_the_compiler(
    opencl_cnn: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    model, compiled, path = opencl_cnn
    feeds = zoo.random_inputs(model, seed=4)
    got = run_isolated(path, feeds, tmp_path)
    assert_close(got, onnxruntime_run(model, feeds))
    want = compiled.run(feeds)  # the same kernels and launches on the same device
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


@needs_opencl
def test_opencl_manifest(opencl_cnn: tuple[onnx.ModelProto, CompiledModel, Path]) -> None:
    _, compiled, path = opencl_cnn
    m = manifest(path)
    assert m["backend"] == "opencl" and m["target"]["api"] == "opencl"
    assert m["target"]["preset"] == compiled.options["preset"] == m["opencl"]["preset"]
    assert m["target"]["preset"] in ("opencl-cpu", "opencl-gpu") and m["target"]["device"]
    section = m["opencl"]
    parts = members(path)
    assert section["source"] == "code/kernels.cl"
    assert parts["code/kernels.cl"].decode() == compiled.artifact.source
    assert set(section["weights"].values()) == {p for p in parts if p.startswith("weights/")}
    assert len(section["plan"]["launches"]) == len(compiled.artifact.plan.launches) > 0
    assert m["compile_options"]["preset"] == m["target"]["preset"]


@needs_opencl
def test_opencl_package_in_this_process(
    opencl_cnn: tuple[onnx.ModelProto, CompiledModel, Path],
) -> None:
    model, compiled, path = opencl_cnn
    loaded = load_package(path, target="opencl")
    feeds = zoo.random_inputs(model, seed=5)
    try:
        assert loaded.input_names == compiled.input_names
        assert loaded.output_names == compiled.output_names
        for name, value in compiled.run(feeds).items():
            np.testing.assert_array_equal(loaded.run(feeds)[name], value)
    finally:
        loaded.close()


@needs_opencl
def test_cli_opencl_round_trip(tmp_path: Path) -> None:
    path, inputs, out = tmp_path / "m.zpkg", tmp_path / "in.npz", tmp_path / "out.npz"
    proc = ziggurat("compile", "zoo:mlp", "--target", "opencl", "-o", path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert manifest(path)["backend"] == "opencl"
    model = zoo.mlp()
    feeds = zoo.random_inputs(model, seed=6)
    np.savez(inputs, **feeds)
    proc = ziggurat("run", path, "--inputs", inputs, "--output", out)
    assert proc.returncode == 0, proc.stderr
    with np.load(out) as data:
        assert_close({k: data[k] for k in data.files}, onnxruntime_run(model, feeds))
    proc = ziggurat("run", path, "--inputs", inputs, "--output", out, "--target", "cuda")
    assert proc.returncode == 1
    assert proc.stderr == f"ziggurat: error: {path}: is a package for opencl, not for cuda\n"


def test_plan_json_round_trip(cuda_mlp: tuple[onnx.ModelProto, Path]) -> None:
    _, path = cuda_mlp
    section = manifest(path)["cuda"]
    weights = {
        name: np.load(io.BytesIO(members(path)[part])) for name, part in section["weights"].items()
    }
    plan = plan_from_json(section["plan"], weights)
    assert plan_to_json(plan) == section["plan"]
    assert all(
        plan.weights[n].shape == tuple(w["shape"])
        for n, w in zip(plan.weights, section["plan"]["weights"])
    )


@needs_nvcc
def test_cuda_package_is_written_without_a_gpu(cuda_mlp: tuple[onnx.ModelProto, Path]) -> None:
    _, path = cuda_mlp
    m = manifest(path)
    parts = members(path)
    assert m["backend"] == "cuda"
    assert m["target"]["api"] == "cuda" and m["target"]["preset"] == "cuda"
    section = m["cuda"]
    arch = section["arch"]
    assert arch == m["target"]["arch"] and arch.startswith("sm_")
    assert section["source"] == "code/kernels.cu" and section["ptx"] == "code/kernels.ptx"
    assert b'extern "C" __global__' in parts["code/kernels.cu"]
    ptx = parts["code/kernels.ptx"].decode()
    assert f".target {arch}" in ptx and ".entry" in ptx
    assert section["ptxas"] == ("checked" if ptxas_path() else "no ptxas")


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed")
def test_ptxas_refuses_bad_ptx() -> None:
    with pytest.raises(CompileError, match=r"ptxas -arch=sm_90 failed"):
        check_ptx(".version 8.0\n.target sm_90\n.address_size 64\nthis is not ptx\n", "sm_90")


@needs_nvcc
def test_cli_cuda_package_without_a_gpu(tmp_path: Path) -> None:
    path = tmp_path / "m.zpkg"
    proc = ziggurat("compile", "zoo:mlp", "--target", "cuda", "-o", path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert manifest(path)["backend"] == "cuda"
    if CUDA is not None:
        np.savez(tmp_path / "in.npz", **zoo.random_inputs(zoo.mlp()))
        proc = ziggurat("run", path, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "o")
        assert proc.returncode == 1
        assert proc.stderr == (
            f"ziggurat: error: {path}: is a package for cuda, but CUDA cannot run here: {CUDA}\n"
        )


@pytest.mark.skipif(CUDA is None, reason="this machine can run CUDA")
def test_a_cuda_package_is_refused_without_cuda(cuda_mlp: tuple[onnx.ModelProto, Path]) -> None:
    _, path = cuda_mlp
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == f"{path}: is a package for cuda, but CUDA cannot run here: {CUDA}"
    proc = run_python(  # refused by the lean runtime too, without importing the compiler
        "from compiler.package import PackageError, load_package\n"
        "try:\n    load_package(sys.argv[1])\nexcept PackageError as e:\n    print(e)\n",
        str(path),
    )
    assert proc.returncode == 0 and proc.stdout.strip() == str(e.value), proc.stderr


@pytest.mark.skipif(CUDA is not None, reason=f"CUDA: {CUDA}")
def test_cuda_package_runs_on_the_gpu(
    cuda_mlp: tuple[onnx.ModelProto, Path], tmp_path: Path
) -> None:
    model, path = cuda_mlp
    feeds = zoo.random_inputs(model, seed=7)
    assert_close(run_isolated(path, feeds, tmp_path), onnxruntime_run(model, feeds))


def test_a_package_for_another_target_is_refused(cuda_mlp: tuple[onnx.ModelProto, Path]) -> None:
    _, path = cuda_mlp
    with pytest.raises(PackageError) as e:
        load_package(path, target="opencl")
    assert str(e.value) == f"{path}: is a package for cuda, not for opencl"


def test_a_backend_for_another_api_is_refused(
    cuda_mlp: tuple[onnx.ModelProto, Path], tmp_path: Path
) -> None:
    """A CUDA package relabelled as OpenCL: its target still says cuda."""
    _, path = cuda_mlp

    def relabel(m: dict) -> None:
        m["backend"] = "opencl"
        m["opencl"] = m.pop("cuda")

    bad = rewrite(path, tmp_path / "m.zpkg", relabel)
    with pytest.raises(PackageError) as e:
        load_package(bad)
    assert str(e.value) == f"{bad}: its backend is opencl but its target is for 'cuda'"


def test_no_opencl_device_is_refused(
    cuda_mlp: tuple[onnx.ModelProto, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path = cuda_mlp

    def relabel(m: dict) -> None:
        m["backend"], m["target"]["api"] = "opencl", "opencl"
        m["opencl"] = m.pop("cuda")

    bad = rewrite(path, tmp_path / "m.zpkg", relabel)
    monkeypatch.setattr(gpu_package, "unavailable_reason", lambda api: "no OpenCL platform")
    with pytest.raises(PackageError) as e:
        load_package(bad)
    assert str(e.value) == (
        f"{bad}: is a package for opencl, but OpenCL cannot run here: no OpenCL platform"
    )


@needs_opencl
def test_an_altered_kernel_source_is_refused(
    opencl_cnn: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    _, _, path = opencl_cnn

    def alter(parts: dict[str, bytes]) -> None:
        parts["code/kernels.cl"] = parts["code/kernels.cl"].replace(b"+", b"-", 1)

    bad = rewrite(path, tmp_path / "m.zpkg", edit_members=alter, rehash=False)
    with pytest.raises(PackageError) as e:
        load_package(bad)
    assert str(e.value) == (
        f"{bad}: part 'code/kernels.cl' does not match its SHA-256 in manifest.json (corrupt or "
        "altered)"
    )

    def garble(parts: dict[str, bytes]) -> None:  # hashed again: the OpenCL build refuses it
        parts["code/kernels.cl"] += b"\nthis is not OpenCL C\n"

    bad = rewrite(path, tmp_path / "g.zpkg", edit_members=garble)
    with pytest.raises(
        PackageError, match=r"its OpenCL kernels cannot be loaded here: OpenCL build"
    ):
        load_package(bad)


@needs_opencl
def test_a_plan_that_does_not_fit_is_refused(
    opencl_cnn: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    _, _, path = opencl_cnn

    def wider(m: dict) -> None:
        m["inputs"][0]["shape"][0] += 1

    bad = rewrite(path, tmp_path / "w.zpkg", wider)
    with pytest.raises(PackageError, match=r"its launch plan takes .* not the inputs and outputs"):
        load_package(bad)

    def out_of_range(m: dict) -> None:
        m["opencl"]["plan"]["launches"][0]["args"][0] = ["input", 7, 0]

    bad = rewrite(path, tmp_path / "r.zpkg", out_of_range)
    with pytest.raises(PackageError) as e:
        load_package(bad)
    assert str(e.value) == (
        f'{bad}: manifest.json: bad `opencl` section (ValueError("launch 0: argument '
        "['input', 7, 0] names no input\"))"
    )


def test_saving_needs_compiled_kernels(tmp_path: Path) -> None:
    from compiler.package import save_package

    class Fake:
        inputs: list = []
        outputs: list = []
        program = object()
        threads = 1
        notes: dict = {}
        options: dict = {}
        target = "opencl"
        artifact = object()

    with pytest.raises(PackageError) as e:
        save_package(Fake(), tmp_path / "g.zpkg")  # type: ignore[arg-type]
    assert str(e.value) == f"{tmp_path / 'g.zpkg'}: holds no OpenCL kernels that a package can hold"
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir())) == "[]"
