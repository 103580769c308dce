"""A tiny numpy interpreter for the BUFFER level, for numerical tests of bufferize/outlining.

xdsl.interpreters has no memref.view/subview/expand_shape/collapse_shape, so this one is ours.
A memref value is (flat array of its base buffer, type): element (i, j, ...) lives at
`flat[offset + i*s0 + j*s1 ...]` with offset/strides taken from the *type*, exactly as the LLVM
level lowers it. That way the test also checks that the layouts bufferize computes are right.
Constants are read-only, so a kernel writing into a global fails loudly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.dialects.linalg.ops import FillOp, GenericOp, IndexOp, YieldOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

_DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32, "i8": np.int8}


def np_dtype(t: Attribute) -> type:
    return _DTYPES[str(t)]


@dataclass
class Buf:
    """A memref value: the flat base buffer and the type describing the view into it."""

    flat: np.ndarray
    type: MemRefType[Attribute]

    def array(self) -> np.ndarray:
        strides = self.type.get_strides()
        offset = self.type.get_offset()
        assert strides is not None and offset is not None
        item = self.flat.itemsize
        shape = tuple(self.type.get_shape())
        extent = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
        assert all(n > 0 for n in shape) and extent <= self.flat.size, "view out of bounds"
        return np.lib.stride_tricks.as_strided(
            self.flat[offset:],
            shape=shape,
            strides=tuple(int(s) * item for s in strides),  # type: ignore[arg-type]
            writeable=self.flat.flags.writeable,
        )


_SCALAR: dict[str, Callable[..., Any]] = {
    "arith.addf": lambda a, b: a + b,
    "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b,
    "arith.maximumf": lambda a, b: max(a, b),
    "arith.minimumf": lambda a, b: min(a, b),
    "arith.negf": lambda a: -a,
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.select": lambda c, a, b: a if c else b,
    "arith.index_cast": lambda a: int(a),
    "arith.sitofp": lambda a: np.float32(a),
    "arith.fptosi": lambda a: int(a),
    "math.exp": lambda a: np.exp(a),
    "math.log": lambda a: np.log(a),
    "math.sqrt": lambda a: np.sqrt(a),
    "math.rsqrt": lambda a: np.float32(1) / np.sqrt(a),
    "math.tanh": lambda a: np.tanh(a),
    "math.absf": lambda a: abs(a),
    "math.erf": lambda a: np.float32(math.erf(float(a))),
    "math.powf": lambda a, b: np.power(a, b),
}
_CMPF = {1: "__eq__", 2: "__gt__", 3: "__ge__", 4: "__lt__", 5: "__le__", 6: "__ne__"}
_CMPI = {0: "__eq__", 1: "__ne__", 2: "__lt__", 3: "__le__", 4: "__gt__", 5: "__ge__"}


class BufferLevelEvaluator:
    """Runs `@main` of a buffer-level module on numpy inputs and returns its out-params."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.funcs = {
            op.sym_name.data: op for op in module.body.block.ops if isinstance(op, func.FuncOp)
        }
        self.globals: dict[str, np.ndarray] = {}
        for op in module.body.block.ops:
            if isinstance(op, memref.GlobalOp):
                init = cast(DenseIntOrFPElementsAttr, op.initial_value)
                t = cast(MemRefType[Attribute], op.type)
                vals = np.array(init.get_values(), dtype=np_dtype(t.element_type))
                n = int(np.prod(t.get_shape()))
                flat = np.broadcast_to(vals, (n,)).copy() if vals.size == 1 else vals.ravel()
                flat.setflags(write=False)
                self.globals[op.sym_name.data] = flat

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        fn = self.funcs["main"]
        types = [cast(MemRefType[Attribute], t) for t in fn.function_type.inputs.data]
        args: list[Buf] = []
        for k, t in enumerate(types):
            if k < len(inputs):
                a = np.ascontiguousarray(inputs[k], dtype=np_dtype(t.element_type))
                assert a.shape == tuple(t.get_shape()), (a.shape, t)
                a = a.ravel().copy()
                a.setflags(write=False)  # inputs must not be overwritten
            else:
                a = np.full(int(np.prod(t.get_shape())), np.nan).astype(np_dtype(t.element_type))
            args.append(Buf(a, t))
        self.call(fn, args)
        return [b.array().copy() for b in args[len(inputs) :]]

    def call(self, fn: func.FuncOp, args: Sequence[Any]) -> None:
        env: dict[SSAValue, Any] = dict(zip(fn.body.block.args, args, strict=True))
        for op in fn.body.block.ops:
            self.step(op, env)

    def step(self, op: Operation, env: dict[SSAValue, Any]) -> None:
        match op:
            case arith.ConstantOp():
                env[op.result] = self.constant(op)
            case memref.GetGlobalOp():
                env[op.memref] = Buf(
                    self.globals[op.name_.root_reference.data], cast(Any, op.memref.type)
                )
            case memref.AllocOp():
                t = cast(MemRefType[Attribute], op.memref.type)
                n = int(np.prod(t.get_shape()))
                # Poison the arena so that reads of unwritten memory show up as NaNs.
                assert str(t.element_type) == "i8", "only byte arenas are allocated"
                env[op.memref] = Buf(np.full(n, 0xFF, dtype=np.uint8), t)
            case memref.ViewOp():
                src = cast(Buf, env[op.source])
                shift = int(env[op.byte_shift])
                t = cast(MemRefType[Attribute], op.result.type)
                assert shift % 64 == 0
                raw = src.flat.view(np.uint8)[shift:]
                n = int(np.prod(t.get_shape())) * np.dtype(np_dtype(t.element_type)).itemsize
                env[op.result] = Buf(raw[:n].view(np_dtype(t.element_type)), t)
            case memref.SubviewOp() | memref.ExpandShapeOp() | memref.CollapseShapeOp():
                src = cast(Buf, env[op.operands[0]])
                env[op.results[0]] = Buf(src.flat, cast(Any, op.results[0].type))
            case memref.DeallocOp():
                pass
            case FillOp():
                env_out = cast(Buf, env[op.outputs[0]]).array()
                env_out[...] = env[op.inputs[0]]
            case GenericOp():
                self.generic(op, env)
            case func.CallOp():
                self.call(self.funcs[op.callee.root_reference.data], [env[a] for a in op.arguments])
            case func.ReturnOp():
                pass
            case _:
                raise NotImplementedError(op.name)

    @staticmethod
    def constant(op: arith.ConstantOp) -> Any:
        v = op.value
        if isinstance(v, FloatAttr):
            return np.float32(v.value.data)
        if isinstance(v, IntegerAttr):
            return int(v.value.data)
        raise NotImplementedError(str(v))

    def generic(self, op: GenericOp, env: dict[SSAValue, Any]) -> None:
        operands = [*op.inputs, *op.outputs]
        arrays = [env[v].array() if isinstance(env.get(v), Buf) else env[v] for v in operands]
        maps = [m.data for m in op.indexing_maps]
        n_dims = maps[0].num_dims
        sizes: list[int | None] = [None] * n_dims
        for m, a in zip(maps, arrays, strict=True):
            if not isinstance(a, np.ndarray):
                continue
            for r, n in zip(m.results, a.shape, strict=True):
                if hasattr(r, "position") and type(r).__name__ == "AffineDimExpr":
                    sizes[r.position] = n
        assert None not in sizes, "iteration domain not derivable"
        block = op.body.block
        n_in = len(op.inputs)
        for point in itertools.product(*(range(cast(int, n)) for n in sizes)):
            idx = [m.eval(list(point), []) for m in maps]
            vals = [
                a[tuple(i)] if isinstance(a, np.ndarray) else a
                for a, i in zip(arrays, idx, strict=True)
            ]
            results = self.body(block, vals, point, env)
            for k, r in enumerate(results):
                arrays[n_in + k][tuple(idx[n_in + k])] = r

    def body(
        self, block: Block, vals: Sequence[Any], point: Sequence[int], outer: dict[SSAValue, Any]
    ) -> list[Any]:
        env: dict[SSAValue, Any] = dict(outer)
        env.update(zip(block.args, vals, strict=True))
        for op in block.ops:
            if isinstance(op, YieldOp):
                return [env[v] for v in op.operands]
            if isinstance(op, IndexOp):
                env[op.result] = point[op.dim.value.data]
            elif isinstance(op, memref.LoadOp):
                arr = cast(Buf, env[op.memref]).array()
                env[op.res] = arr[tuple(int(env[i]) for i in op.indices)]
            elif isinstance(op, arith.ConstantOp):
                env[op.result] = self.constant(op)
            elif isinstance(op, arith.CmpfOp):
                a, b = env[op.lhs], env[op.rhs]
                env[op.result] = getattr(a, _CMPF[op.predicate.value.data])(b)
            elif isinstance(op, arith.CmpiOp):
                a, b = env[op.lhs], env[op.rhs]
                env[op.result] = getattr(int(a), _CMPI[op.predicate.value.data])(int(b))
            elif op.name in _SCALAR:
                r = _SCALAR[op.name](*(env[v] for v in op.operands))
                t = str(op.results[0].type)
                env[op.results[0]] = np_dtype(t)(r) if t in _DTYPES else r
            else:
                raise NotImplementedError(op.name)
        raise AssertionError("generic body without linalg.yield")
