"""convert-parallel-to-runtime: each `scf.parallel` becomes a call into the thread-pool runtime.

Like MLIR's `async-parallel-for` (which outlines the body for the async runtime), the loop body is
outlined into a function over a range of the collapsed (row-major linearized) iteration space,

    func.func private @<fn>_parallel<k>(%begin: index, %end: index, %ctx: !llvm.ptr)

and the loop is replaced by `zrt_parallel_for(@<fn>_parallel<k>, ctx, count)` (see
compiler/parallel_runtime.c), which splits [0, count) into one contiguous chunk per thread.

Values the body uses from outside the loop are either
  - rematerialized in the outlined function when side-effect free (constants, memref views) or a
    `memref.alloca` (scratch buffers must be per thread anyway), or
  - passed through `ctx`, one 8-byte slot each (memrefs as bare pointers, index as i64, scalars).
Bounds and steps must be constants (ziggurat's generated loops always have them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable, is_side_effect_free
from xdsl.utils.exceptions import DiagnosticException

PTR = llvm.LLVMPointerType()
RUNTIME_ENTRY = "zrt_parallel_for"
"""void zrt_parallel_for(void (*body)(int64_t begin, int64_t end, void *ctx), void *ctx, int64_t n)"""


def _constant_index(value: SSAValue, what: str) -> int:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    raise DiagnosticException(
        f"convert-parallel-to-runtime: scf.parallel needs constant bounds and steps ({what} is not a constant)"
    )


def _rematerializable(op: Operation) -> bool:
    return not op.regions and (is_side_effect_free(op) or isinstance(op, memref.AllocaOp))


def _passable(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, MemRefType | IndexType | Float32Type | Float64Type) or (
        isinstance(t, IntegerType) and t.width.data <= 64
    )


def _captures(loop: scf.ParallelOp) -> list[SSAValue]:
    """Values used inside `loop` but defined outside it, in first-use order."""
    inside: set[SSAValue] = set()
    for op in loop.body.walk():
        inside.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.args)
    inside.update(loop.body.block.args)
    seen: dict[SSAValue, None] = {}
    for op in loop.body.walk():
        for v in op.operands:
            if v not in inside:
                seen.setdefault(v)
    return list(seen)


def _plan(captured: list[SSAValue]) -> tuple[list[Operation], list[SSAValue]]:
    """Split the captured values into ops to clone (dependencies first) and values to pass."""
    clone: list[Operation] = []
    passed: list[SSAValue] = []
    done: set[SSAValue] = set()

    def visit(v: SSAValue) -> None:
        if v in done:
            return
        done.add(v)
        owner = v.owner
        if isinstance(owner, Operation) and _rematerializable(owner):
            for x in owner.operands:
                visit(x)
            if owner not in clone:
                clone.append(owner)
            return
        if not _passable(v):
            raise DiagnosticException(
                f"convert-parallel-to-runtime: the parallel loop body uses a value of type {v.type} "
                "computed outside the loop; only memrefs and scalars can be passed to threads"
            )
        passed.append(v)

    for v in captured:
        visit(v)
    return clone, passed


def _slot_type(value: SSAValue) -> Attribute:
    t = value.type
    if isinstance(t, MemRefType):
        return PTR
    if isinstance(t, IndexType):
        return i64
    return t


def _declare_runtime(module: ModuleOp) -> None:
    if SymbolTable.lookup_symbol(module, RUNTIME_ENTRY) is not None:
        return
    decl = llvm.FuncOp(
        RUNTIME_ENTRY,
        llvm.LLVMFunctionType([PTR, PTR, i64], llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("external"),
    )
    module.body.block.add_op(decl)


def _fresh_name(module: ModuleOp, base: str) -> str:
    k = 0
    while SymbolTable.lookup_symbol(module, f"{base}_parallel{k}") is not None:
        k += 1
    return f"{base}_parallel{k}"


def outline(loop: scf.ParallelOp, fn: func.FuncOp, module: ModuleOp) -> None:
    """Replace `loop` (inside `fn`) by a runtime call to an outlined body function."""
    if loop.initVals:
        raise DiagnosticException(
            "convert-parallel-to-runtime: scf.parallel with reductions is not supported"
        )
    lbs = [_constant_index(v, "a lower bound") for v in loop.lowerBound]
    ubs = [_constant_index(v, "an upper bound") for v in loop.upperBound]
    steps = [_constant_index(v, "a step") for v in loop.step]
    counts = [max(0, -(-(u - lb) // s)) for lb, u, s in zip(lbs, ubs, steps)]
    total = math.prod(counts)
    clone, passed = _plan(_captures(loop))

    # --- the outlined body: unpack ctx, rematerialize, loop over [begin, end) of the collapsed space
    name = _fresh_name(module, fn.sym_name.data)
    entry = Block(arg_types=[IndexType(), IndexType(), PTR])
    begin, end, ctx = entry.args
    b = Builder(InsertPoint.at_end(entry))
    mapping: dict[SSAValue, SSAValue] = {}
    for j, v in enumerate(passed):
        slot = b.insert(llvm.GEPOp(ctx, [j], i64)).result
        loaded = b.insert(llvm.LoadOp(slot, _slot_type(v))).dereferenced_value
        if isinstance(v.type, MemRefType):
            loaded = b.insert(UnrealizedConversionCastOp.get([loaded], [v.type])).results[0]
        elif isinstance(v.type, IndexType):
            loaded = b.insert(arith.IndexCastOp(loaded, IndexType())).result
        mapping[v] = loaded
    for op in clone:
        copy = op.clone(value_mapper=mapping)
        b.insert(copy)
    consts: dict[int, SSAValue] = {}

    def idx(n: int) -> SSAValue:
        if n not in consts:
            c = arith.ConstantOp(IntegerAttr(n, IndexType()))
            Builder(InsertPoint.at_start(entry)).insert(c)
            consts[n] = c.result
        return consts[n]

    body = Block(arg_types=[IndexType()])
    b.insert(scf.ForOp(begin, end, idx(1), [], body))
    b.insert(func.ReturnOp())
    ib = Builder(InsertPoint.at_end(body))
    linear = body.args[0]
    for d, (arg, lb, step) in enumerate(zip(loop.body.block.args, lbs, steps)):
        stride = math.prod(counts[d + 1 :])
        q = linear if stride == 1 else ib.insert(arith.DivUIOp(linear, idx(stride))).result
        if d > 0:  # the outermost quotient is already below its count
            q = ib.insert(arith.RemUIOp(q, idx(counts[d]))).result
        iv = q if step == 1 else ib.insert(arith.MuliOp(q, idx(step))).result
        if lb:
            iv = ib.insert(arith.AddiOp(iv, idx(lb))).result
        arg.replace_all_uses_with(iv)
    for op in list(loop.body.block.ops):
        if isinstance(op, scf.ReduceOp):
            continue
        op.detach()
        ib.insert(op)
    ib.insert(scf.YieldOp())
    for inner in body.walk():
        for i, v in enumerate(inner.operands):
            if v in mapping:
                inner.operands[i] = mapping[v]
    outlined = func.FuncOp(
        name,
        FunctionType.from_lists([IndexType(), IndexType(), PTR], []),
        Region(entry),
        visibility="private",
    )
    Builder(InsertPoint.after(fn)).insert(outlined)

    # --- the call site: fill ctx, call the runtime
    fb = fn.body.block
    cb = Builder(InsertPoint.before(loop))
    n_slots = Builder(InsertPoint.at_start(fb)).insert(
        llvm.ConstantOp(IntegerAttr(max(len(passed), 1), i64), i64)
    )
    ctx_slots = Builder(InsertPoint.after(n_slots)).insert(llvm.AllocaOp(n_slots, i64, alignment=8))
    for j, v in enumerate(passed):
        value = v
        if isinstance(v.type, MemRefType):
            value = cb.insert(UnrealizedConversionCastOp.get([v], [PTR])).results[0]
        elif isinstance(v.type, IndexType):
            value = cb.insert(arith.IndexCastOp(v, i64)).result
        slot = cb.insert(llvm.GEPOp(ctx_slots, [j], i64)).result
        cb.insert(llvm.StoreOp(value, slot))
    fptr = cb.insert(llvm.AddressOfOp(name, PTR)).result
    count = cb.insert(llvm.ConstantOp(IntegerAttr(total, i64), i64)).result
    cb.insert(llvm.CallOp(RUNTIME_ENTRY, fptr, ctx_slots, count))
    loop.detach()
    loop.erase()
    for op in reversed(clone):  # rebuilt in the body; drop the originals nothing else uses
        if not any(r.uses for r in op.results):
            op.detach()
            op.erase()
    _declare_runtime(module)


@dataclass(frozen=True)
class ConvertParallelToRuntimePass(ModulePass):
    """Outline every scf.parallel into a function run by ziggurat's thread-pool runtime."""

    name: ClassVar[str] = "convert-parallel-to-runtime"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        while True:
            loop = next((o for o in op.walk() if isinstance(o, scf.ParallelOp)), None)
            if loop is None:
                return
            fn = loop.parent_op()
            while fn is not None and not isinstance(fn, func.FuncOp):
                fn = fn.parent_op()
            if fn is None:
                raise DiagnosticException(
                    "convert-parallel-to-runtime: scf.parallel outside a func.func"
                )
            outline(loop, fn, op)


__all__ = ["RUNTIME_ENTRY", "ConvertParallelToRuntimePass"]
