"""A numpy reference evaluator for the TENSOR level (levels.md), for tests only.

xdsl.interpreters was checked first and is not enough here: its linalg interpreter has no
`linalg.index`, only fills zero-initialized outputs, and there are no implementations of
tensor.expand_shape/collapse_shape/extract_slice/insert_slice or math.tanh/erf. This evaluator
is small and vectorized: a linalg.generic runs its body once per point of the reduction loops,
on numpy arrays spanning all the parallel points (parallel points write distinct outputs, so
this is exactly the sequential semantics, in the sequential accumulation order).

It also enforces the level contract: any op outside the allowed set raises.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    i1,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

from dialects.dense import numpy_dtype

TOP_LEVEL_OPS = {
    "arith.constant",
    "tensor.empty",
    "linalg.fill",
    "linalg.generic",
    "tensor.expand_shape",
    "tensor.collapse_shape",
    "tensor.extract_slice",
    "tensor.insert_slice",
    "func.return",
}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _dtype(t: Any) -> Any:
    if isinstance(t, IntegerType):
        return {1: np.bool_, 32: np.int32, 64: np.int64}[t.width.data]
    return np.float32 if t == f32 else np.float64


def _dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    t = attr.type
    assert isinstance(t, TensorType)
    shape = tuple(t.get_shape())
    flat = np.frombuffer(attr.data.data, dtype=_dtype(t.element_type))
    if flat.size == 1 and math.prod(shape) != 1:
        return np.full(shape, flat[0])
    return flat.reshape(shape).copy()


def _affine(e: AffineExpr, dims: Sequence[Any]) -> Any:
    if isinstance(e, AffineDimExpr):
        return dims[e.position]
    if isinstance(e, AffineConstantExpr):
        return e.value
    assert isinstance(e, AffineBinaryOpExpr), e
    a, b = _affine(e.lhs, dims), _affine(e.rhs, dims)
    match e.kind:
        case AffineBinaryOpKind.Add:
            return a + b
        case AffineBinaryOpKind.Mul:
            return a * b
        case AffineBinaryOpKind.Mod:
            return a % b
        case AffineBinaryOpKind.FloorDiv:
            return a // b
        case AffineBinaryOpKind.CeilDiv:
            return -(-a // b)


_CMPF = {
    "oeq": np.equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "one": np.not_equal,
    "ueq": np.equal,
    "ugt": np.greater,
    "uge": np.greater_equal,
    "ult": np.less,
    "ule": np.less_equal,
    "une": np.not_equal,
}
_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPI_FN = [
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
]


def _scalar_op(op: Operation, a: list[Any], dims: Sequence[Any]) -> Any:
    """One body op on numpy arrays (or scalars); f32 stays f32."""
    n = op.name
    f = np.float32
    match n:
        case "arith.constant":
            v = op.properties["value"]
            if isinstance(v, FloatAttr):
                return f(v.value.data)
            assert isinstance(v, IntegerAttr)
            if v.type == i1:
                return np.bool_(v.value.data)
            return np.int64(v.value.data)
        case "arith.addf" | "arith.addi":
            return a[0] + a[1]
        case "arith.subf" | "arith.subi":
            return a[0] - a[1]
        case "arith.mulf" | "arith.muli":
            return a[0] * a[1]
        case "arith.divf":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.divide(a[0], a[1], dtype=f)
        case "arith.divsi":
            return np.trunc(np.divide(a[0], a[1], dtype=np.float64)).astype(np.int64)
        case "arith.maximumf" | "arith.maxsi" | "arith.maxui":
            return np.maximum(a[0], a[1])
        case "arith.minimumf" | "arith.minsi" | "arith.minui":
            return np.minimum(a[0], a[1])
        case "arith.andi":
            return a[0] & a[1]
        case "arith.ori":
            return a[0] | a[1]
        case "arith.xori":
            return a[0] ^ a[1]
        case "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.fptosi":
            return np.asarray(a[0]).astype(numpy_dtype(op.results[0].type))
        case "arith.negf":
            return -a[0]
        case "arith.select":
            return np.where(a[0], a[1], a[2])
        case "arith.cmpf":
            pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
            name = CMPF_COMPARISON_OPERATIONS[pred]  # MLIR's predicate order
            assert name in _CMPF, name
            return _CMPF[name](a[0], a[1])
        case "arith.cmpi":
            pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
            return _CMPI_FN[pred](a[0], a[1])
        case "arith.sitofp" | "arith.uitofp":
            return np.asarray(a[0]).astype(f)
        case "arith.index_cast":
            return np.asarray(a[0]).astype(np.int64)
        case "math.exp":
            return np.exp(a[0], dtype=f)
        case "math.log":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.log(a[0], dtype=f)
        case "math.sqrt":
            with np.errstate(invalid="ignore"):
                return np.sqrt(a[0], dtype=f)
        case "math.rsqrt":
            return f(1) / np.sqrt(a[0], dtype=f)
        case "math.tanh":
            return np.tanh(a[0], dtype=f)
        case "math.erf":
            return _erf(a[0]).astype(f)
        case "math.absf":
            return np.abs(a[0])
        case "math.powf":
            with np.errstate(invalid="ignore"):
                return np.power(a[0], a[1], dtype=f)
        case "linalg.index":
            return dims[op.properties["dim"].value.data]  # type: ignore[attr-defined]
        case _:
            raise NotImplementedError(f"body op {n}")


def _run_generic(op: Operation, env: dict[SSAValue, Any]) -> np.ndarray:
    ins = [env[v] for v in op.operands]  # inputs then the single init
    maps = [m.data for m in op.properties["indexing_maps"]]  # type: ignore[attr-defined]
    iters = [str(it.data) for it in op.properties["iterator_types"]]  # type: ignore[attr-defined]
    ndims = len(iters)
    extents: list[int | None] = [None] * ndims
    for arr, m in zip(ins, maps, strict=True):
        for k, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr) and extents[e.position] is None:
                extents[e.position] = arr.shape[k]
    assert all(x is not None for x in extents), f"uninferable loop extents {extents}"
    par = [d for d in range(ndims) if "parallel" in iters[d]]
    red = [d for d in range(ndims) if "parallel" not in iters[d]]
    grids = np.indices([extents[d] for d in par]).reshape(len(par), -1) if par else None
    out = ins[-1].copy()
    block: Block = op.regions[0].blocks[0]
    for rpoint in itertools.product(*(range(extents[d]) for d in red)):  # type: ignore[arg-type]
        dims: list[Any] = [None] * ndims
        for i, d in enumerate(par):
            dims[d] = grids[i]  # type: ignore[index]
        for i, d in enumerate(red):
            dims[d] = rpoint[i]
        npts = grids.shape[1] if grids is not None else 1
        idx = [tuple(np.broadcast_to(_affine(e, dims), (npts,)) for e in m.results) for m in maps]
        vals: dict[SSAValue, Any] = {}
        for arg, arr, ix in zip(block.args, [*ins[:-1], out], idx, strict=True):
            vals[arg] = arr[ix] if arr.ndim else np.broadcast_to(arr, (npts,))
        for bop in block.ops:
            if bop.name == "linalg.yield":
                res = np.broadcast_to(vals[bop.operands[0]], (npts,))
                if out.ndim:
                    out[idx[-1]] = res
                else:
                    out[...] = res[0]
                break
            if bop.name == "tensor.extract":
                t = env[bop.operands[0]]
                coords = tuple(np.broadcast_to(vals[c], (npts,)) for c in bop.operands[1:])
                assert all(
                    (c >= 0).all() and (c < s).all() for c, s in zip(coords, t.shape, strict=True)
                ), "out of bounds"
                vals[bop.results[0]] = t[coords]
                continue
            vals[bop.results[0]] = _scalar_op(bop, [vals[v] for v in bop.operands], dims)
    return out


def _slices(op: Operation) -> tuple[slice, ...]:
    offs = op.properties["static_offsets"].get_values()  # type: ignore[attr-defined]
    sizes = op.properties["static_sizes"].get_values()  # type: ignore[attr-defined]
    strides = op.properties["static_strides"].get_values()  # type: ignore[attr-defined]
    return tuple(
        slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(offs, sizes, strides, strict=True)
    )


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def run_function(
    module: ModuleOp, inputs: Sequence[np.ndarray], name: str = "main"
) -> list[np.ndarray]:
    """Evaluate `@name` of a TENSOR-level module on numpy inputs; returns its results."""
    fn = next(o for o in module.ops if o.name == "func.func" and o.sym_name.data == name)  # type: ignore[attr-defined]
    block = fn.regions[0].blocks[0]
    env: dict[SSAValue, Any] = {}
    for arg, x in zip(block.args, inputs, strict=True):
        env[arg] = np.asarray(x)
    for op in block.ops:
        n = op.name
        if n not in TOP_LEVEL_OPS:
            raise NotImplementedError(f"{n} is not a TENSOR-level op")
        if n == "func.return":
            return [env[v] for v in op.operands]
        r = op.results[0]
        if n == "arith.constant":
            v = op.properties["value"]
            env[r] = (
                _dense(v) if isinstance(v, DenseIntOrFPElementsAttr) else np.float32(v.value.data)
            )  # type: ignore[attr-defined]
        elif n == "tensor.empty":
            dt = _dtype(r.type.element_type)  # type: ignore[attr-defined]
            # NaN for floats: reading an uninitialized tensor shows up in the results
            env[r] = np.full(_shape(r), np.nan if dt == np.float32 else -(2**40), dtype=dt)
        elif n == "linalg.fill":
            env[r] = np.full(_shape(r), env[op.operands[0]], dtype=_dtype(r.type.element_type))  # type: ignore[attr-defined]
        elif n == "linalg.generic":
            env[r] = _run_generic(op, env)
        elif n in ("tensor.expand_shape", "tensor.collapse_shape"):
            env[r] = env[op.operands[0]].reshape(_shape(r))
        elif n == "tensor.extract_slice":
            env[r] = env[op.operands[0]][_slices(op)].copy()
            assert env[r].shape == _shape(r)
        elif n == "tensor.insert_slice":
            dest = env[op.operands[1]].copy()
            dest[_slices(op)] = env[op.operands[0]]
            env[r] = dest
    raise AssertionError("no func.return")
