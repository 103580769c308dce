"""Helpers for graph-level pass tests: build `@main` with graph ops, apply a pass, and compare
the compiled (machine-code) outputs before and after it on random inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from compiler.model import compile_module

BuildFn = Callable[[Builder, list[SSAValue]], Sequence[Operation | SSAValue] | Operation]


def build(shapes: Sequence[Sequence[int]], fn: BuildFn) -> ModuleOp:
    """func @main(f32 tensors of `shapes`) whose body `fn` builds; its values are returned."""
    block = Block(arg_types=[TensorType(f32, list(s)) for s in shapes])
    b = Builder(InsertPoint.at_end(block))
    outs = fn(b, list(block.args))
    if isinstance(outs, Operation):
        outs = list(outs.results)
    vals = [o.results[0] if isinstance(o, Operation) else o for o in outs]
    b.insert(func.ReturnOp(*vals))
    f = func.FuncOp("main", ([a.type for a in block.args], [v.type for v in vals]), Region(block))
    m = ModuleOp([f])
    m.verify()
    return m


def op_names(m: ModuleOp) -> list[str]:
    """Names of the ops in @main's body, in order (graph ops and func.return)."""
    return [
        op.name
        for op in m.walk()
        if op.parent_op() is not None and op.parent_op().name == "func.func"
    ]  # type: ignore[union-attr]


def run_compiled(m: ModuleOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    model = compile_module(m.clone())
    out = model.run(dict(zip(model.input_names, inputs, strict=True)))
    return [out[n] for n in model.output_names]


def apply_and_compare(
    m: ModuleOp, p: ModulePass, rtol: float = 1e-5, seed: int = 0
) -> list[np.ndarray]:
    """Apply `p` to `m` in place; assert the compiled outputs match those of the original.

    Elements match to `rtol` relative to themselves or (for values that come out of
    cancellation, where a changed rounding order shows most) to the largest output."""
    rng = np.random.default_rng(seed)
    main = next(op for op in m.ops if isinstance(op, func.FuncOp))
    inputs = [
        rng.standard_normal(tuple(t.get_shape())).astype(np.float32)  # type: ignore[attr-defined]
        for t in main.function_type.inputs.data
    ]
    before = run_compiled(m, inputs)
    p.apply(Context(), m)
    m.verify()
    after = run_compiled(m, inputs)
    for b, a in zip(before, after, strict=True):
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(scale, 0.1))
    return after
