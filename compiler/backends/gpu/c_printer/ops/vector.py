"""Handlers of the rank-1 vector ops: loads and stores (whole or lane by lane), broadcast,
shuffle, fma, extract / insert of one lane and reductions."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    MemRefType,
    VectorType,
)
from xdsl.ir import Operation, SSAValue

from compiler.backends.gpu.c_printer.c_types import _Vec
from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter, _handles
from compiler.backends.gpu.c_printer.memref_layout import _layout


def _vec_of(p: _FunctionPrinter, value: SSAValue) -> _Vec:
    v = p.vec(value.type)
    if v is None:
        raise _Unsupported(f"{value.type} is not a vector")
    return v


def _lane_step(memref: SSAValue) -> int:
    """Elements between the lanes of a vector access: the innermost stride (1 in valid IR)."""
    t = memref.type
    assert isinstance(t, MemRefType)
    strides = _layout(t)[0]
    return strides[-1] if strides else 1


@_handles("vector.load")
def _vector_load(p: _FunctionPrinter, op: Operation) -> None:
    memref, *indices = op.operands
    result = op.results[0]
    v = _vec_of(p, result)
    ptr, index = p.address(memref, indices)
    step = _lane_step(memref)
    whole = p.fl.vload(v, ptr, index) if step == 1 else None
    if whole is not None:
        p.define(result, whole)
        return
    lanes = [f"{ptr}[{p.address(memref, indices, i * step)[1]}]" for i in range(v.lanes)]
    if v.elem.is_bool:
        lanes = [f"({lane} != 0)" for lane in lanes]
    p.define(result, p.construct(v, lanes))


@_handles("vector.store")
def _vector_store(p: _FunctionPrinter, op: Operation) -> None:
    value, memref, *indices = op.operands
    v = _vec_of(p, value)
    ptr, index = p.address(memref, indices)
    x = p.expr(value)
    step = _lane_step(memref)
    whole = p.fl.vstore(v, x, ptr, index) if step == 1 else None
    if whole is not None:
        p.line(whole)
        return
    for i in range(v.lanes):
        lane = p.lane_get(x, v, i)
        if v.elem.is_bool:
            lane = f"({p.fl.mem_ctype(v.elem)}){lane}"
        p.line(f"{ptr}[{p.address(memref, indices, i * step)[1]}] = {lane};")


@_handles("vector.broadcast")
def _broadcast(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    v = _vec_of(p, result)
    w = p.vec(source.type)
    x = p.expr(source)
    if w is not None and w.lanes == v.lanes:
        p.names[result] = x
        return
    if w is not None:
        if w.lanes != 1:
            raise _Unsupported(f"broadcast of {source.type} to {result.type}")
        x = p.lane_get(x, w, 0)
    if v.storage == 1:
        p.define(result, x)
    else:
        p.define(result, p.fl.splat(v, p.lane_put(x, v)))


@_handles("vector.shuffle")
def _shuffle(p: _FunctionPrinter, op: Operation) -> None:
    """Lanes picked from two vectors by a static mask (index < lanes of the first: from it,
    else from the second), built lane by lane: both C flavours and every width."""
    a, b = op.operands
    result = op.results[0]
    v, va, vb = _vec_of(p, result), _vec_of(p, a), _vec_of(p, b)
    xa, xb = p.expr(a), p.expr(b)
    mask = op.mask.get_values()  # type: ignore[attr-defined]
    lanes = [
        p.lane_put(p.lane_get(xa, va, m) if m < va.lanes else p.lane_get(xb, vb, m - va.lanes), v)
        for m in mask
    ]
    p.define(result, p.construct(v, lanes))


@_handles("vector.fma", "math.fma")
def _fma(p: _FunctionPrinter, op: Operation) -> None:
    result = op.results[0]
    e = p.scalar_of(result.type)
    xs = [p.expr(x) for x in op.operands]
    v = p.vec(result.type)
    if v is None or v.storage == 1:
        p.define(result, p.fl.fma(e, False, *xs) or "")
        return
    whole = p.fl.fma(e, True, *xs)
    if whole is not None:
        p.define(result, whole)
        return
    lanes = [p.fl.fma(e, False, *(p.lane_get(x, v, i) for x in xs)) or "" for i in range(v.lanes)]
    p.define(result, p.construct(v, lanes))


def _position(op: Operation) -> int:
    if len(op.operands) > (2 if op.name == "vector.insert" else 1):
        raise _Unsupported("only static positions are printed")
    position = op.properties.get("static_position")
    values = list(position.get_values()) if isinstance(position, DenseArrayBase) else []
    if len(values) != 1:
        raise _Unsupported("only a single lane of a rank-1 vector is addressed")
    return int(values[0])


def _lane_vec(p: _FunctionPrinter, scalar: SSAValue, vec: SSAValue, verb: str) -> _Vec:
    """The vector `vec` that vector.extract or vector.insert (`verb`) addresses one lane of, the
    `scalar` one (a sub-vector is not printed)."""
    if isinstance(scalar.type, VectorType):
        raise _Unsupported(f"{verb} a sub-vector is not printed")
    return _vec_of(p, vec)


@_handles("vector.extract")
def _extract(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    v = _lane_vec(p, result, source, "extracting")
    p.define(result, p.lane_get(p.expr(source), v, _position(op)))


@_handles("vector.insert")
def _insert(p: _FunctionPrinter, op: Operation) -> None:
    scalar, dest = op.operands[0], op.operands[1]
    v = _lane_vec(p, scalar, dest, "inserting")
    lane = _position(op)
    if v.storage == 1:
        p.define(op.results[0], p.expr(scalar))
        return
    name = p.define(op.results[0], p.expr(dest))
    p.line(f"{p.fl.lane(name, lane)} = {p.lane_put(p.expr(scalar), v)};")


_REDUCTIONS = {
    "add": "arith.addf",
    "mul": "arith.mulf",
    "minnumf": "arith.minnumf",
    "maxnumf": "arith.maxnumf",
    "minimumf": "arith.minimumf",
    "maximumf": "arith.maximumf",
}
_INT_REDUCTIONS = {
    "add": "arith.addi",
    "mul": "arith.muli",
    "minui": "arith.minui",
    "minsi": "arith.minsi",
    "maxui": "arith.maxui",
    "maxsi": "arith.maxsi",
    "and": "arith.andi",
    "or": "arith.ori",
    "xor": "arith.xori",
}


@_handles("vector.reduction")
def _reduction(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    v = _vec_of(p, source)
    kind_attr = op.properties.get("kind")
    kind = str(getattr(getattr(kind_attr, "data", None), "value", ""))
    table = _REDUCTIONS if v.elem.is_float else _INT_REDUCTIONS
    if kind not in table:
        raise _Unsupported(f"reduction <{kind}> of {source.type}")
    combine = table[kind]
    x = p.expr(source)
    lanes = [p.lane_get(x, v, i) for i in range(v.lanes)]
    if len(op.operands) > 1:
        lanes.insert(0, p.expr(op.operands[1]))
    name = p.define(result, lanes[0])
    for lane in lanes[1:]:
        text = p.scalar(combine, [name, lane], [v.elem, v.elem], v.elem)
        p.line(f"{name} = {text};")
