"""outline-kernels: one private function per distinct kernel, @main only calls them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg.ops import FillOp, GenericOp

sys.path.insert(0, str(Path(__file__).parent))

from buffer_level_eval import BufferLevelEvaluator  # noqa: E402
from bufferize_cases import CASES, HDR, T23, X23, context, parse, unary  # noqa: E402

from passes.transforms.bufferize import BufferizePass  # noqa: E402
from passes.transforms.outline_kernels import OutlineKernelsPass  # noqa: E402


def lower(src: str) -> ModuleOp:
    module = parse(src)
    BufferizePass().apply(context(), module)
    OutlineKernelsPass().apply(context(), module)
    module.verify()
    return module


def funcs(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, func.FuncOp)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_outlined_numerics(name: str) -> None:
    src, inputs, ref = CASES[name]
    module = lower(src)
    main = funcs(module)["main"]
    assert not [op for op in main.walk() if isinstance(op, GenericOp | FillOp)]
    for got, want in zip(BufferLevelEvaluator(module).run(*inputs), ref(*inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_identical_kernels_share_a_function() -> None:
    body = ""
    prev = "%x"
    for k, name in enumerate(["%a", "%b", "%c"]):
        op = "math.exp %in : f32" if k < 2 else "math.tanh %in : f32"
        body += f"\n  %e{k} = tensor.empty() : {T23}" + unary(name, prev, f"%e{k}", T23, op)
        prev = name
    module = lower(f"{HDR} -> {T23} {{{body}\n  return %c : {T23}\n}}")
    fns = funcs(module)
    kernels = sorted(n for n in fns if n.startswith("kernel_"))
    assert kernels == ["kernel_0", "kernel_1"]
    assert all(fns[k].sym_visibility == StringAttr("private") for k in kernels)
    calls = [
        op.callee.root_reference.data for op in fns["main"].walk() if isinstance(op, func.CallOp)
    ]
    assert calls == ["kernel_0", "kernel_0", "kernel_1"]
    out = BufferLevelEvaluator(module).run(X23)[0]
    np.testing.assert_allclose(out, np.tanh(np.exp(np.exp(X23))), rtol=1e-5)


def test_attributes_and_captures_move_with_the_kernel() -> None:
    src, inputs, ref = CASES["gather"]
    module = parse(src)
    BufferizePass().apply(context(), module)
    main = funcs(module)["main"]
    generic = next(op for op in main.walk() if isinstance(op, GenericOp))
    generic.attributes["sched.schedule"] = StringAttr("tile")
    OutlineKernelsPass().apply(context(), module)
    module.verify()
    kernel = funcs(module)["kernel_0"]
    # The gather table (a captured buffer) became an extra argument.
    assert len(kernel.function_type.inputs.data) == 3
    moved = next(op for op in kernel.walk() if isinstance(op, GenericOp))
    assert moved.attributes["sched.schedule"] == StringAttr("tile")
    np.testing.assert_allclose(BufferLevelEvaluator(module).run(*inputs)[0], ref(*inputs)[0])
