"""Whole models compiled for several threads: same results as one thread and as onnxruntime,
kernels really call the thread pool, and bad thread counts are refused."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from compiler import zoo
from compiler.errors import CompileError
from compiler.model import compile_model


@pytest.mark.parametrize("name", ["small_cnn", "transformer_block", "mlp"])
def test_two_threads_match_one_and_onnxruntime(name: str) -> None:
    proto = getattr(zoo, name)()
    feeds = zoo.random_inputs(proto)
    one = compile_model(proto, threads=1)
    two = compile_model(proto, threads=2)
    assert not one.program.parallel
    if name != "mlp":  # the mlp's kernels are below the parallel threshold
        assert two.program.parallel
    a, b = one.run(feeds), two.run(feeds)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    for k in ref:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b[k], ref[k], rtol=1e-3, atol=1e-4)


def test_runner_uses_the_requested_thread_count() -> None:
    from compiler import parallel_runtime

    proto = zoo.small_cnn()
    model = compile_model(proto, threads=3)
    parallel_runtime.set_num_threads(1)
    model.runner(zoo.random_inputs(proto))
    assert parallel_runtime.get_num_threads() == 3
    parallel_runtime.set_num_threads(1)


def test_bad_thread_count() -> None:
    with pytest.raises(CompileError, match="threads must be at least 1"):
        compile_model(zoo.mlp(), threads=0)
