"""build_plan on a hand-written gpu-level module: every buffer reference through view chains,
the grid and block of each launch, which arguments are outputs, and the ops it refuses.

MODULE is shared with the runtime tests (test_opencl_runtime.py, test_cuda.py): out = 2*(in + w)
through the arena. gpu.* ops and memref.global have no custom syntax in xDSL 0.74, hence the
generic form for them.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from compiler.backends.gpu.host_plan import (
    BufferRef,
    BufferSpec,
    HostPlanError,
    Launch,
    build_plan,
)
from compiler.errors import CompileError, InputError

WEIGHT = np.arange(1, 17, dtype=np.float32) * 0.5

MODULE = """
builtin.module attributes {gpu.container_module} {
  "memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<16xf32>,
    initial_value = dense<[WEIGHT]> : tensor<16xf32>, constant}> : () -> ()
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<16xf32>, memref<16xf32>,
        memref<16xf32, strided<[1], offset: 32>>) -> (), kernel}> ({
    ^bb0(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32, strided<[1], offset: 32>>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %x = memref.load %a[%t] : memref<16xf32>
      %y = memref.load %b[%t] : memref<16xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %c[%t] : memref<16xf32, strided<[1], offset: 32>>
      "gpu.return"() : () -> ()
    }) {sym_name = "add_weight"} : () -> ()
    "gpu.func"() <{function_type = (memref<2x8xf32>, memref<16xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<2x8xf32>, %o: memref<16xf32>):
      %i = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %j = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %x = memref.load %a[%i, %j] : memref<2x8xf32>
      %z = arith.addf %x, %x : f32
      %o2 = memref.expand_shape %o [[0, 1]] output_shape [2, 8] : memref<16xf32> into memref<2x8xf32>
      memref.store %z, %o2[%i, %j] : memref<2x8xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "scale"} : () -> ()
  }) : () -> ()
  func.func @main(%in: memref<16xf32>, %out: memref<2x8xf32>) {
    %w = memref.get_global @w : memref<16xf32>
    %arena = memref.alloc() : memref<256xi8>
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %wr = memref.reinterpret_cast %w to offset: [0], sizes: [16], strides: [1]
      : memref<16xf32> to memref<16xf32>
    %v0 = memref.view %arena[%c0][] : memref<256xi8> to memref<64xf32>
    %v1 = memref.view %arena[%c128][] : memref<256xi8> to memref<16xf32>
    %s = memref.subview %v0[32] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: 32>>
    "gpu.launch_func"(%c1, %c1, %c1, %c16, %c1, %c1, %in, %wr, %s)
      <{kernel = @kernels::@add_weight,
        operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0>}>
      : (index, index, index, index, index, index,
         memref<16xf32>, memref<16xf32>, memref<16xf32, strided<[1], offset: 32>>) -> ()
    %e = memref.expand_shape %v1 [[0, 1]] output_shape [2, 8] : memref<16xf32> into memref<2x8xf32>
    %oc = memref.collapse_shape %out [[0, 1]] : memref<2x8xf32> into memref<16xf32>
    "gpu.launch_func"(%c2, %c1, %c1, %c8, %c1, %c1, %e, %oc)
      <{kernel = @kernels::@scale,
        operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}>
      : (index, index, index, index, index, index, memref<2x8xf32>, memref<16xf32>) -> ()
    memref.dealloc %arena : memref<256xi8>
    func.return
  }
}
""".replace("WEIGHT", ", ".join(str(float(v)) for v in WEIGHT))
"""add_weight writes in + w at arena byte 0 + 32 elements (= byte 128); scale reads the view at
byte 128 and writes 2x that into the output."""


def parse(text: str = MODULE) -> ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, gpu.GPU, memref.MemRef, arith.Arith):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def expected(x: np.ndarray) -> np.ndarray:
    """What MODULE computes from input `x`."""
    return (2 * (x + WEIGHT)).reshape(2, 8)


def assert_main_matches_numpy_twice(program) -> None:
    """A runtime's `function("main")` on MODULE's plan, twice on the same device buffers."""
    main = program.function("main")
    rng = np.random.default_rng(0)
    for _ in range(2):
        x = rng.standard_normal(16).astype(np.float32)
        out = np.full((2, 8), np.nan, np.float32)
        main(x, out)
        np.testing.assert_allclose(out, expected(x), rtol=1e-6)


def assert_resident_launches(program) -> None:
    """copy_in once, then launch_all: the device time of back-to-back sequences; the inputs
    read back as the device holds them."""
    x = np.arange(16, dtype=np.float32)
    program.copy_in([x])
    assert program.launch_all(1) > 0 and program.launch_all(10) > 0
    np.testing.assert_array_equal(program.read_inputs()[0], x)


def test_plan_reads_buffers_weights_and_launches():
    plan = build_plan(parse(), 1)
    assert plan.inputs == (BufferSpec("arg0", (16,), np.dtype(np.float32)),)
    assert plan.outputs == (BufferSpec("arg1", (2, 8), np.dtype(np.float32)),)
    assert list(plan.weights) == ["w"]
    np.testing.assert_array_equal(plan.weights["w"], WEIGHT)
    assert plan.weights["w"].flags.c_contiguous
    assert plan.arena_bytes == 256
    assert plan.launches == (
        Launch(
            "add_weight",
            (1, 1, 1),
            (16, 1, 1),
            (BufferRef("input", 0, 0), BufferRef("weight", "w", 0), BufferRef("arena", 0, 0)),
        ),
        Launch(
            "scale", (2, 1, 1), (8, 1, 1), (BufferRef("arena", 0, 128), BufferRef("output", 0, 0))
        ),
    )


def test_the_input_count_splits_the_arguments():
    plan = build_plan(parse(), num_inputs=2)
    assert [s.name for s in plan.inputs] == ["arg0", "arg1"] and plan.outputs == ()
    assert plan.launches[1].args[1] == BufferRef("input", 1, 0)
    with pytest.raises(HostPlanError, match="cannot have 3 inputs"):
        build_plan(parse(), num_inputs=3)


def test_view_shifts_accumulate_and_names_come_from_arg_attrs():
    text = MODULE.replace(
        "%s = memref.subview %v0",
        "%v2 = memref.view %arena[%c8][] : memref<256xi8> to memref<62xi8>\n"
        "    %v3 = memref.view %v2[%c16][] : memref<62xi8> to memref<64xf32>\n"
        "    %s = memref.subview %v3",
    ).replace(
        "func.func @main(%in: memref<16xf32>,",
        'func.func @main(%in: memref<16xf32> {ziggurat.name = "x"},',
    )
    plan = build_plan(parse(text), 1)
    assert plan.launches[0].args[2] == BufferRef("arena", 0, 24)
    assert plan.inputs[0].name == "x"


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "%c16 = arith.constant 16 : index",
            "%c16 = arith.addi %c8, %c8 : index",
            "unsupported op arith.addi",
        ),
        (
            "memref.dealloc %arena",
            "%a2 = memref.alloc() : memref<8xi8>\n    memref.dealloc %arena",
            "a second memref.alloc",
        ),
        ("@kernels::@scale", "@kernels::@missing", "no gpu.func"),
        (
            "%c2 = arith.constant 2 : index",
            "%c2 = arith.constant 2 : index\n    %f = arith.constant 2.0 : f32",
            "integer constants",
        ),
        ("%c2, %c1, %c1, %c8", "%c2, %c1, %c1, %c0", "block"),
    ],
)
def test_refuses_what_the_runtimes_cannot_run(old: str, new: str, message: str):
    text = MODULE.replace(old, new)
    assert text != MODULE
    with pytest.raises(HostPlanError, match=message) as info:
        build_plan(parse(text), 1)
    assert isinstance(info.value, CompileError)


def test_launch_operand_must_have_the_kernel_parameter_type():
    text = MODULE.replace("%e, %oc)", "%e, %out)").replace(
        "memref<2x8xf32>, memref<16xf32>) -> ()\n    memref.dealloc",
        "memref<2x8xf32>, memref<2x8xf32>) -> ()\n    memref.dealloc",
    )
    with pytest.raises(HostPlanError, match="kernel's parameter is memref<16xf32>"):
        build_plan(parse(text), 1)


def test_other_functions_do_not_disturb_the_plan():
    text = MODULE.replace(
        "func.func @main", "func.func private @g() {\n    func.return\n  }\n  func.func @main"
    )
    assert build_plan(parse(text), 1).launches == build_plan(parse(), 1).launches


def test_dynamic_view_shift_is_refused():
    text = MODULE.replace(
        "%v1 = memref.view %arena[%c128][]",
        "%d = memref.dim %in, %c0 : memref<16xf32>\n    %v1 = memref.view %arena[%d][]",
    )
    with pytest.raises(HostPlanError, match="memref.dim"):
        build_plan(parse(text), 1)


def test_check_arguments_names_the_bad_array():
    plan = build_plan(parse(), 1)
    x, out = np.zeros(16, np.float32), np.zeros((2, 8), np.float32)
    plan.check_arguments([x, out])
    with pytest.raises(InputError, match="output 'arg1' is float64"):
        plan.check_arguments([x, out.astype(np.float64)])
    with pytest.raises(InputError, match="1 input and 1 output"):
        plan.check_arguments([x])
    with pytest.raises(InputError, match="not C-contiguous"):
        plan.check_arguments([np.zeros(32, np.float32)[::2], out])
    assert [a.tolist() for a in plan.input_arrays({"arg0": x})] == [x.tolist()]
    with pytest.raises(InputError, match="unknown inputs"):
        plan.input_arrays({"y": x})
