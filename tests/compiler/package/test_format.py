"""compiler/package/format.py: member paths, and tensor specs to the manifest and back."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.package.format import member_problem, spec_from_json, spec_to_json
from compiler.tensor_spec import TensorSpec


@pytest.mark.parametrize("name", ["manifest.json", "code/kernel-0.o", "weights/12.npy"])
def test_plain_member_paths(name: str) -> None:
    assert member_problem(name) is None


@pytest.mark.parametrize("name", ["/x", "\\x", "../x", "a/../../x", "a\\..\\x", "c:x"])
def test_escaping_member_paths(name: str) -> None:
    assert member_problem(name) == (
        f"member path {name!r} escapes the package (absolute or with '..')"
    )


@pytest.mark.parametrize("name", ["", "a//b", "a/./b", "dir/", "a b", "x\x00y", "é"])
def test_odd_member_paths(name: str) -> None:
    assert member_problem(name) == f"member path {name!r} is not a plain relative path"


SPECS = [
    TensorSpec("x", (2, 3), np.dtype("float32")),
    TensorSpec("h", (4,), np.dtype("float16"), np.dtype("float32")),
    TensorSpec("idx", (2, 7), np.dtype("int64"), None, 1),
    TensorSpec("idx_length", (), np.dtype("int64"), None, None, "idx"),
    TensorSpec("mask", (3,), np.dtype("bool")),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_specs_round_trip(spec: TensorSpec) -> None:
    assert spec_from_json(spec_to_json(spec)) == spec


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"shape": [1], "dtype": "float32"}, "has no name"),
        ({"name": "x", "shape": [-1], "dtype": "float32"}, "bad shape [-1]"),
        ({"name": "x", "shape": "12", "dtype": "float32"}, "bad shape '12'"),
        ({"name": "x", "shape": [1], "dtype": "O"}, "dtype 'O' is not a bool, integer or float"),
        ({"name": "x", "shape": [1], "dtype": 3}, "dtype 3 is not a string"),
        ({"name": "x", "shape": [1], "dtype": "f4", "run_time_axis": 1}, "bad run_time_axis 1"),
    ],
)
def test_malformed_specs(entry: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        spec_from_json(entry)
