"""The one table of element type names <-> numpy dtypes (dialects/element_types.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dialects.element_types import ELEMENT_DTYPES, element_dtype, element_type

NAMES = ["f32", "f64", "i1", "i8", "i16", "i32", "i64"]


def test_the_table_holds_these_types() -> None:
    assert sorted(ELEMENT_DTYPES) == sorted(NAMES)
    assert element_dtype("i1") == np.bool_
    assert element_dtype("i64") == np.int64
    assert element_dtype("f32") == np.float32


@pytest.mark.parametrize("name", NAMES)
def test_every_type_round_trips(name: str) -> None:
    dtype = element_dtype(name)
    assert isinstance(dtype, np.dtype)
    assert element_type(dtype) == name
    assert element_type(dtype.type) == name  # a scalar type is accepted as well
    assert element_type(dtype.name) == name  # and a dtype name


def test_types_without_a_dtype_are_refused() -> None:
    with pytest.raises(ValueError, match="f16"):
        element_dtype("f16")
    with pytest.raises(ValueError, match="index"):
        element_dtype("index")
    with pytest.raises(ValueError, match="complex64"):
        element_type(np.complex64)
    with pytest.raises(ValueError, match="uint8"):
        element_type(np.uint8)


def test_the_module_imports_no_xdsl() -> None:
    """The jit (and so the tuner's runner process) may use it: numpy only."""
    code = (
        "import sys, dialects.element_types\nprint(sorted(m for m in sys.modules if 'xdsl' in m))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
