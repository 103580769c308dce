"""The JIT (compiler/backends/llvm_cpu/jit.py) on hand-written LLVM IR: emit an object file,
load it (alone, or linked under a module), call with numpy arrays, bind external globals, find
the thread-pool runtime; and its promise to the tuner's runner process: no xDSL."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler.backends.llvm_cpu import jit
from compiler.runtime import aligned_copy, aligned_empty

SCALE = """
define void @kernel(ptr %x, ptr %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr float, ptr %x, i64 %i
  %py = getelementptr float, ptr %y, i64 %i
  %v = load float, ptr %px
  %w = fmul float %v, 2.0
  store float %w, ptr %py
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

CALLER = """
declare void @kernel(ptr, ptr, i64)
@weights = external global [4 x float], align 64

define float @main(ptr %x, ptr %y) {
  call void @kernel(ptr %x, ptr %y, i64 4)
  %p = getelementptr [4 x float], ptr @weights, i64 0, i64 3
  %w = load float, ptr %p
  ret float %w
}
"""

KERNEL = {"kernel": (("ptr", "ptr", "i64"), None)}


def _object(text: str) -> bytes:
    tm = jit.target_machine()
    mod = jit.parse(text)
    jit.optimize(mod, tm)
    return jit.emit_object(mod, tm)


def test_an_object_file_loads_alone_and_is_called_with_numpy_arrays() -> None:
    obj = _object(SCALE)
    assert obj[:4] == b"\x7fELF"
    program = jit.load(objects=[obj], signatures=KERNEL)
    try:
        x, y = aligned_copy(np.arange(8, dtype=np.float32)), aligned_empty(8)
        program.function("kernel")(x, y, 8)
        np.testing.assert_array_equal(y, 2 * x)
        raw = program.c_function("kernel")  # pointers as ints: no conversion per call
        raw(x.ctypes.data, y.ctypes.data, 4)
        assert not program.parallel and program.timings["jit_s"] > 0
        with pytest.raises(ValueError, match="C-contiguous"):
            program.function("kernel")(x[::2], y[:4], 4)
        with pytest.raises(TypeError, match="takes 3 arguments"):
            program.function("kernel")(x, y)
        with pytest.raises(KeyError):
            program.function("missing")
    finally:
        program.close()


def test_a_name_the_code_does_not_define_is_a_lookup_error() -> None:
    program = jit.load(objects=[_object(SCALE)], signatures={"other": ((), None)})
    try:
        with pytest.raises(LookupError, match="defines no function `other`"):
            program.c_function("other")
    finally:
        program.close()


def test_a_module_links_objects_and_binds_external_globals_to_buffers() -> None:
    tm = jit.target_machine()
    weights = aligned_copy(np.array([1, 2, 3, 4.5], dtype=np.float32))
    symbol = "weights_test_jit"
    mod = jit.parse(CALLER.replace("@weights", f"@{symbol}"))
    jit.optimize(mod, tm)
    program = jit.load(
        mod,
        [_object(SCALE)],
        signatures={"main": (("ptr", "ptr"), "f32")},
        symbols={symbol: weights},
        tm=tm,
    )
    x, y = aligned_copy(np.ones(4, dtype=np.float32)), aligned_empty(4)
    assert program.function("main")(x, y) == 4.5
    np.testing.assert_array_equal(y, 2 * x)
    assert program.bound_constants[symbol] is weights
    assert "define" in program.llvm_ir and program.asm


def test_code_calling_the_thread_pool_runtime_is_recognized() -> None:
    assert jit.uses_parallel_runtime("call void @zrt_parallel_for(ptr %f, ptr %c, i64 4)")
    assert jit.uses_parallel_runtime(b"\x00zrt_parallel_for\x00")
    assert not jit.uses_parallel_runtime(SCALE, _object(SCALE))


def test_host_target_names_this_cpu() -> None:
    host = jit.host_target()
    assert set(host) == {"cpu", "features"} and host["cpu"]


def test_the_jit_and_the_runner_import_no_xdsl() -> None:
    """The tuner's runner process loads code through the JIT and must start light."""
    code = (
        "import sys\n"
        "import compiler.backends.llvm_cpu.jit, autotune.measure.runner\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'xdsl', 'passes', 'dialects'})\n"
        "print(heavy)\n"
    )
    root = Path(__file__).resolve().parents[4]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_c_types_of_llvm_types() -> None:
    assert jit.c_type(None) is None
    assert jit.c_type("ptr") is ctypes.c_void_p
    with pytest.raises(NotImplementedError):
        jit.c_type("v16f32")
