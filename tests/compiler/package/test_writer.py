"""compiler/package/writer.py: what `CompiledModel.save` writes.

The documented layout and manifest fields, hashes that match, the same bytes when the same model
is saved twice, mode 0644 whatever the umask, and clear errors for an unwritable path or a model
that is not CPU code.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zipfile
from pathlib import Path
from types import SimpleNamespace

import onnx
import pytest

from compiler.model import CompiledModel
from compiler.package import PackageError, load_package, save_package
from compiler.package.format import ziggurat_version
from tests.support.packages import manifest, members


def test_layout_and_manifest(mlp: tuple[onnx.ModelProto, CompiledModel, Path]) -> None:
    _, compiled, path = mlp
    contents = members(path)
    data = manifest(path)
    kernels = len(compiled.program.objects)
    assert kernels >= 1
    code = [f"code/kernel-{i}.o" for i in range(kernels)] + ["code/main.o"]
    weights = [f"weights/{i}.npy" for i in range(len(compiled.program.bound_constants))]
    assert list(contents) == ["manifest.json", *code, *weights]
    assert data["format"] == "ziggurat-package" and data["format_version"] == 2
    assert data["backend"] == "llvm-cpu"
    assert data["ziggurat_version"] == ziggurat_version() != "unknown"
    assert data["inputs"] == [{"name": "input", "shape": [4, 64], "dtype": "float32"}]
    assert data["outputs"] == [{"name": "output", "shape": [4, 10], "dtype": "float32"}]
    assert data["threads"] == 1
    assert data["compile_options"] == {
        "threads": 1,
        "layout": "auto",
        "optimize": True,
        "schedules": [],
    }
    assert set(data["notes"]) == {"ziggurat.memory_plan"}
    section = data["llvm-cpu"]
    assert section["objects"] == code
    # @main and what frees the arena it keeps between calls (convert-memref-to-llvm)
    assert section["functions"] == {
        "main": [["ptr", "ptr"], None],
        "ziggurat_release_arenas": [[], None],
    }
    assert section["release"] == "ziggurat_release_arenas"
    assert sorted(section["weights"].values()) == sorted(weights)
    assert set(section["weights"]) == set(compiled.program.bound_constants)
    assert section["needs"] == []
    assert data["parts"] == {
        n: hashlib.sha256(b).hexdigest() for n, b in contents.items() if n != "manifest.json"
    }
    with zipfile.ZipFile(path) as zf:
        kinds = {i.filename: i.compress_type for i in zf.infolist()}
    assert all(kinds[w] == zipfile.ZIP_STORED for w in weights)
    assert kinds["code/main.o"] == zipfile.ZIP_DEFLATED


def test_thread_pool_and_schedules_recorded(
    cnn2: tuple[onnx.ModelProto, CompiledModel, Path],
) -> None:
    data = manifest(cnn2[2])
    assert data["llvm-cpu"]["needs"] == ["parallel-runtime"]
    assert data["threads"] == 2 and data["compile_options"]["threads"] == 2


def test_schedule_passes_are_recorded_as_strings(tmp_path: Path) -> None:
    from compiler import zoo
    from compiler.model import compile_model

    compiled = compile_model(zoo.matmul(32), schedules=["tile{sizes=8,8,8}"])
    compiled.save(tmp_path / "mm.zpkg")
    assert manifest(tmp_path / "mm.zpkg")["compile_options"]["schedules"] == ["tile{sizes=8,8,8}"]


def test_same_model_same_bytes(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    _, compiled, path = mlp
    compiled.save(tmp_path / "again.zpkg")
    assert (tmp_path / "again.zpkg").read_bytes() == path.read_bytes()


def test_mode_whatever_the_umask(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path
) -> None:
    old = os.umask(0o002)
    try:
        mlp[1].save(tmp_path / "m.zpkg")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m.zpkg").st_mode) == 0o644
    assert load_package(tmp_path / "m.zpkg").input_names == ["input"]
    assert [p.name for p in tmp_path.iterdir()] == ["m.zpkg"]  # no temporary file left


def test_unwritable_path(mlp: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path) -> None:
    path = tmp_path / "missing" / "m.zpkg"
    with pytest.raises(PackageError) as e:
        mlp[1].save(path)
    assert str(e.value) == f"{path}: cannot write the package: No such file or directory"
    (tmp_path / "d.zpkg").mkdir()
    with pytest.raises(PackageError) as e:
        mlp[1].save(tmp_path / "d.zpkg")
    assert str(e.value) == f"{tmp_path / 'd.zpkg'}: cannot write the package: Is a directory"
    assert [p.name for p in tmp_path.iterdir()] == ["d.zpkg"]  # no temporary file left


def test_only_compiled_code(tmp_path: Path) -> None:
    gpu_like = SimpleNamespace(inputs=[], outputs=[], program=object(), threads=1, notes={})
    with pytest.raises(PackageError) as e:
        save_package(gpu_like, tmp_path / "g.zpkg")  # type: ignore[arg-type]
    assert str(e.value) == (
        f"{tmp_path / 'g.zpkg'}: holds no compiled code that a package can hold (compile it with "
        "compile_model)"
    )


def test_weights_are_stored_64_byte_aligned(
    cnn2: tuple[onnx.ModelProto, CompiledModel, Path],
) -> None:
    """Each weight's array data starts at a multiple of 64 in the file: the loader binds it in
    place (the zip's local header, its padding field, then numpy's 64-byte-padded header)."""
    path = cnn2[2]
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        infos = [i for i in zf.infolist() if i.filename.endswith(".npy")]
    assert infos
    for info in infos:
        at = info.header_offset
        name_len, extra_len = struct.unpack_from("<HH", data, at + 26)
        start = at + 30 + name_len + extra_len
        header_len = data[start:].index(b"\n") + 1  # numpy's header ends its padding with \n
        assert (start + header_len) % 64 == 0, info.filename
