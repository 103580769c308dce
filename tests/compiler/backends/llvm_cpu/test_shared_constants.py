"""compiler/backends/llvm_cpu/shared_constants.py: one copy per process of each distinct large
constant, shared by every program bound to it (the sizes of a symbolic model), freed with the
last of them; never shared where the IR lets code write the global."""

from __future__ import annotations

import gc

import numpy as np

from compiler.backends.llvm_cpu.shared_constants import live_constants, shared_constant
from compiler.symbolic_model import compile_symbolic
from tests.support.symbolic_matmul import symbolic_matmul, weight


def test_equal_bytes_give_one_read_only_array() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(3000).astype(np.float32)
    first = shared_constant(a)
    again = shared_constant(a.copy().reshape(30, 100))  # another array, the same bytes
    assert again is first
    assert first.ctypes.data % 64 == 0 and not first.flags.writeable
    np.testing.assert_array_equal(first, a)
    other = shared_constant(a + 1)
    assert other is not first and not np.shares_memory(other, first)
    as_ints = shared_constant(a.view(np.int32))  # the same bytes, another dtype: not shared
    assert as_ints is not first and as_ints.dtype == np.int32


def test_an_array_lives_while_a_holder_does() -> None:
    a = np.arange(5000, dtype=np.float32) * 0.5
    gc.collect()  # programs earlier tests left behind go first
    before = live_constants()
    held = shared_constant(a)
    assert live_constants() == before + 1
    address = held.ctypes.data
    assert shared_constant(a).ctypes.data == address
    del held
    gc.collect()
    assert live_constants() == before
    fresh = shared_constant(a)  # a new copy, shared from now on
    np.testing.assert_array_equal(fresh, a)


def test_the_sizes_of_a_symbolic_model_share_its_weights() -> None:
    proto = symbolic_matmul(1)
    w = weight(proto)
    model = compile_symbolic(proto, one_compile=False, cache=False)  # a compile per size
    rng = np.random.default_rng(2)
    programs = []
    for batch in (1, 5):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        np.testing.assert_allclose(model.run({"x": x})["y"], x @ w, rtol=1e-5, atol=1e-5)
        programs.append(model.specialize(batch=batch).program)
    assert model.compiles == 2
    one, two = (list(p.bound_constants.values()) for p in programs)
    assert one and len(one) == len(two)
    for a, b in zip(one, two, strict=True):
        assert a is b  # one buffer, bound by both programs
    model.close()
