"""compiler/package/llvm_cpu.py: the CPU program's parts, and loading them back.

The parts are the kernels' objects, @main's and one .npy per bound weight; loading them links
the very code that was compiled (nothing is compiled again) with the same weights; a manifest
whose function types are not ones the jit can call is refused.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.model import CompiledModel
from compiler.package import PackageError, load_package
from compiler.package.llvm_cpu import pack
from compiler.runtime import is_aligned
from tests.support.packages import rewrite


def test_parts(mlp: tuple[onnx.ModelProto, CompiledModel, Path]) -> None:
    program = mlp[1].program
    section, parts = pack(program)
    assert section["objects"][:-1] == [f"code/kernel-{i}.o" for i in range(len(program.objects))]
    for i, obj in enumerate(program.objects):
        assert parts[f"code/kernel-{i}.o"] == obj
    assert parts["code/main.o"][:4] == b"\x7fELF"
    for symbol, member in section["weights"].items():
        np.testing.assert_array_equal(
            np.load(io.BytesIO(parts[member])), program.bound_constants[symbol]
        )


def test_loaded_weights_are_bound_aligned(mlp: tuple[onnx.ModelProto, CompiledModel, Path]) -> None:
    loaded = load_package(mlp[2])
    bound = loaded.program.bound_constants
    assert bound.keys() == mlp[1].program.bound_constants.keys()
    for symbol, array in bound.items():
        assert is_aligned(array, 64)
        np.testing.assert_array_equal(array, mlp[1].program.bound_constants[symbol])
    assert loaded.program.objects[:-1] == mlp[1].program.objects


def test_uncallable_function_types(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package,
        tmp_path / "m.zpkg",
        lambda m: m["llvm-cpu"]["functions"].update(main=[["ptr", "vector"], None]),
    )
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == (
        f"{path}: manifest.json: function 'main' has a bad type [['ptr', 'vector'], None]"
    )


def test_unknown_runtime(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", lambda m: m["llvm-cpu"].update(needs=["gpu"]))
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value) == f"{path}: needs ['gpu'], which this ziggurat does not provide"


def test_a_weight_that_is_not_npy(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package, tmp_path / "m.zpkg", edit_members=lambda p: p.update({"weights/0.npy": b"x"})
    )
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert str(e.value).startswith(f"{path}: part 'weights/0.npy' is not a .npy array (")


def test_weights_bound_in_place_when_aligned() -> None:
    from compiler.package.llvm_cpu import _npy, _weight
    from compiler.runtime import aligned_empty

    blob = _npy(np.arange(32, dtype=np.float32))
    buf = aligned_empty(len(blob) + 1, np.uint8)
    buf[: len(blob)] = np.frombuffer(blob, np.uint8)
    aligned = _weight("p", "w", memoryview(buf[: len(blob)]))
    assert np.shares_memory(aligned, buf) and aligned.tolist() == list(range(32))
    buf[1:] = buf[:-1].copy()  # the same bytes one byte later: misaligned, so copied
    moved = _weight("p", "w", memoryview(buf[1:]))
    assert not np.shares_memory(moved, buf) and is_aligned(moved, 64)
    assert moved.tolist() == list(range(32))
