"""compiler/package/loaded_model.py: a loaded package takes and gives what its model does.

The same input checks with the same messages as the CompiledModel it was saved from, the same
names, and a runner for timing that computes the same outputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.errors import InputError
from compiler.model import CompiledModel
from compiler.package import LoadedModel, load_package

BAD_FEEDS = [
    {"inputs": np.zeros((4, 64), np.float32)},
    {},
    {"input": np.zeros((4, 64), np.float64)},
    {"input": np.zeros((4, 65), np.float32)},
]


@pytest.fixture(scope="module")
def loaded(mlp: tuple[onnx.ModelProto, CompiledModel, Path]) -> LoadedModel:
    return load_package(mlp[2])


@pytest.mark.parametrize("feeds", BAD_FEEDS, ids=["unknown", "missing", "dtype", "shape"])
def test_input_errors_are_the_compiled_models(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], loaded: LoadedModel, feeds: dict
) -> None:
    with pytest.raises(InputError) as want:
        mlp[1].run(feeds)
    with pytest.raises(InputError) as got:
        loaded.run(feeds)
    assert str(got.value) == str(want.value)


def test_names_and_specs(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], loaded: LoadedModel
) -> None:
    assert loaded.input_names == mlp[1].input_names == ["input"]
    assert loaded.output_names == mlp[1].output_names == ["output"]
    assert loaded.inputs == mlp[1].inputs and loaded.outputs == mlp[1].outputs
    assert loaded.path == str(mlp[2])


def test_runner_computes_what_run_does(
    mlp: tuple[onnx.ModelProto, CompiledModel, Path], loaded: LoadedModel
) -> None:
    feeds = zoo.random_inputs(mlp[0], seed=7)
    run = loaded.runner(feeds)
    run()
    assert np.isfinite(loaded.run(feeds)["output"]).all()
    np.testing.assert_array_equal(loaded.run(feeds)["output"], mlp[1].run(feeds)["output"])
