"""The package format's names and fields, shared by the writer and the reader.

The layout itself is documented in compiler/package/__init__.py. A reader accepts exactly
FORMAT_VERSION: a later ziggurat that changes the layout or the meaning of a field raises it.
"""

from __future__ import annotations

import hashlib
import re
from importlib import metadata
from typing import Any

import numpy as np

from compiler.tensor_spec import RUN_TIME_DIM, TensorSpec

FORMAT = "ziggurat-package"
FORMAT_VERSION = 2
"""2: outputs may be index checks (`index_check`), results the runtime judges and hides."""
SUFFIX = ".zpkg"
"""What `ziggurat compile -o` and `ziggurat run` take for a package."""
MANIFEST = "manifest.json"

DTYPE_KINDS = "biuf"
"""Element kinds a package's inputs and outputs may have (bool, ints, floats): nothing that
holds Python objects or pointers, whatever a manifest says."""

_PLAIN_MEMBER = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")


def sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def ziggurat_version() -> str:
    try:
        return metadata.version("ziggurat")
    except metadata.PackageNotFoundError:
        return "unknown"


def member_problem(name: str) -> str | None:
    """Why `name` may not be a member path (None if it is plain and relative). Members are
    never extracted, but a package that another tool unzips must not write outside its folder."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
        return f"member path {name!r} escapes the package (absolute or with '..')"
    if not _PLAIN_MEMBER.fullmatch(name) or "." in parts:
        return f"member path {name!r} is not a plain relative path"
    return None


def spec_to_json(spec: TensorSpec) -> dict[str, Any]:
    shape = [None if d == RUN_TIME_DIM else d for d in spec.shape]  # null: a run-time dim
    out: dict[str, Any] = {"name": spec.name, "shape": shape, "dtype": spec.dtype.name}
    if spec.compute_dtype is not None:
        out["compute_dtype"] = spec.compute_dtype.name
    if spec.run_time_axis is not None:
        out["run_time_axis"] = spec.run_time_axis
    if spec.length_of is not None:
        out["length_of"] = spec.length_of
    if spec.index_check is not None:
        out["index_check"] = spec.index_check
        out["index_extent"] = spec.index_extent
    return out


def _dtype(value: Any) -> np.dtype:
    if not isinstance(value, str):
        raise ValueError(f"dtype {value!r} is not a string")
    dt = np.dtype(value)
    if dt.kind not in DTYPE_KINDS:
        raise ValueError(f"dtype {value!r} is not a bool, integer or float type")
    return dt


def spec_from_json(d: Any) -> TensorSpec:
    """A manifest entry back to a TensorSpec; ValueError (or TypeError, KeyError) if malformed."""
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise ValueError(f"tensor entry {d!r} has no name")
    shape = d["shape"]
    if not isinstance(shape, list) or not all(
        x is None or (type(x) is int and x >= 0) for x in shape
    ):
        raise ValueError(f"tensor {d['name']!r} has a bad shape {shape!r}")
    shape = [RUN_TIME_DIM if x is None else x for x in shape]
    axis, length_of = d.get("run_time_axis"), d.get("length_of")
    if axis is not None and not (isinstance(axis, int) and 0 <= axis < len(shape)):
        raise ValueError(f"tensor {d['name']!r} has a bad run_time_axis {axis!r}")
    if length_of is not None and not isinstance(length_of, str):
        raise ValueError(f"tensor {d['name']!r} has a bad length_of {length_of!r}")
    check, extent = d.get("index_check"), d.get("index_extent")
    if check is not None and not (
        isinstance(check, str)
        and type(extent) is int
        and extent >= 0
        and shape == [2]
        and d["dtype"] == "int64"
    ):
        raise ValueError(f"tensor {d['name']!r} has a bad index check {check!r} ({extent!r})")
    compute = d.get("compute_dtype")
    return TensorSpec(
        d["name"],
        tuple(shape),
        _dtype(d["dtype"]),
        None if compute is None else _dtype(compute),
        axis,
        length_of,
        check,
        None if check is None else extent,
    )
