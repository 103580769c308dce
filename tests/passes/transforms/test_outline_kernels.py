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
from bufferize_cases import CASES, HDR, T23, X23, binary, context, parse, unary  # noqa: E402

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
    # Both exps read the argument %x, so neither may write over its input in place (a kernel
    # writing in place has one buffer argument fewer, hence a different signature).
    body = ""
    for k, name in enumerate(["%a", "%b"]):
        body += f"\n  %e{k} = tensor.empty() : {T23}"
        body += unary(name, "%x", f"%e{k}", T23, "math.exp %in : f32")
    body += f"\n  %e2 = tensor.empty() : {T23}"
    body += binary("%c", "%a", "%b", "%e2", T23, "arith.addf %p, %q : f32")
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
    np.testing.assert_allclose(out, 2 * np.exp(X23), rtol=1e-5)


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
