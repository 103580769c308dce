"""`profile-kernels`: count the cycles of every kernel call of `@main`, in the model as it runs.

Each call from @main to a kernel function of the module is bracketed by two reads of the CPU's
cycle counter (`llvm.readcyclecounter`: rdtsc on x86), and the difference is added to that call
site's slot of a public i64 global, `@ziggurat_profile_cycles`; the last slot counts the whole of
@main. Timing the kernels inside the model, rather than one by one in a harness, keeps what the
neighbours leave in the caches and what the thread pool costs. Reading the counter takes a few
nanoseconds against kernels of microseconds and more.

The module attribute `ziggurat.profile` lists the slots in call order: the callee, what it
computes (kernel_summary.describe_kernel) and its FLOPs per call. Run it after `outline-kernels`
and before the kernels are lowered to loops (where their linalg ops are gone).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from passes.analysis.kernel_summary import summarize_kernel
from passes.analysis.main_function import main_function

PROFILE_GLOBAL = "ziggurat_profile_cycles"
"""The i64 global of cycle counts: one slot per kernel call site of @main, then @main's total."""
PROFILE_ATTR = "ziggurat.profile"
"""The module attribute naming the slots (callee, description, flops), in call order."""


def _read_clock() -> llvm.CallIntrinsicOp:
    return llvm.CallIntrinsicOp("llvm.readcyclecounter", [], [i64])


def _accumulate(counters: SSAValue, slot: int, start: SSAValue, stop: SSAValue) -> list[Operation]:
    """counters[slot] += stop - start."""
    index = arith.ConstantOp(IntegerAttr(slot, IndexType()))
    elapsed = arith.SubiOp(stop, start)
    old = memref.LoadOp.get(counters, [index.result])
    new = arith.AddiOp(old.res, elapsed.result)
    store = memref.StoreOp.get(new.result, counters, [index.result])
    return [index, elapsed, old, new, store]


def _bracket(call: Operation, counters: SSAValue, slot: int) -> None:
    start, stop = _read_clock(), _read_clock()
    Rewriter.insert_op(start, InsertPoint.before(call))
    Rewriter.insert_op(stop, InsertPoint.after(call))
    assert start.ress is not None and stop.ress is not None
    Rewriter.insert_op(_accumulate(counters, slot, start.ress, stop.ress), InsertPoint.after(stop))


@dataclass(frozen=True)
class ProfileKernelsPass(ModulePass):
    """Bracket @main's kernel calls with cycle-counter reads summed per call site."""

    name = "profile-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        if main is None or not main.body.blocks:
            raise DiagnosticException("profile-kernels: the module has no @main to profile")
        if any(
            isinstance(o, memref.GlobalOp) and o.sym_name.data == PROFILE_GLOBAL
            for o in op.body.block.ops
        ):
            raise DiagnosticException("profile-kernels: the module is profiled already")
        kernels = {
            f.sym_name.data: f
            for f in op.body.block.ops
            if isinstance(f, func.FuncOp) and f is not main and f.body.blocks
        }
        calls = [
            c
            for c in main.walk()
            if isinstance(c, func.CallOp) and c.callee.root_reference.data in kernels
        ]
        slots = len(calls) + 1
        counters_type = MemRefType(i64, [slots])
        op.body.block.insert_op_before(
            memref.GlobalOp.get(
                StringAttr(PROFILE_GLOBAL),
                counters_type,
                DenseIntOrFPElementsAttr.from_list(TensorType(i64, [slots]), [0] * slots),
                sym_visibility=StringAttr("public"),
                alignment=64,
            ),
            main,
        )
        entry = main.body.blocks[0]
        counters = memref.GetGlobalOp(PROFILE_GLOBAL, counters_type)
        begin = _read_clock()
        Rewriter.insert_op([counters, begin], InsertPoint.at_start(entry))
        rows = []
        for slot, call in enumerate(calls):
            _bracket(call, counters.memref, slot)
            callee = call.callee.root_reference.data
            what, flops = summarize_kernel(kernels[callee]) or ("no linalg op", 0.0)
            rows.append(
                DictionaryAttr(
                    {
                        "kernel": StringAttr(callee),
                        "what": StringAttr(what),
                        "flops": IntegerAttr(int(flops), i64),
                    }
                )
            )
        terminator = entry.last_op if len(main.body.blocks) == 1 else None
        if not isinstance(terminator, func.ReturnOp):
            raise DiagnosticException("profile-kernels: @main must be one block ending in return")
        end = _read_clock()
        Rewriter.insert_op(end, InsertPoint.before(terminator))
        assert begin.ress is not None and end.ress is not None
        Rewriter.insert_op(
            _accumulate(counters.memref, slots - 1, begin.ress, end.ress),
            InsertPoint.before(terminator),
        )
        op.attributes[PROFILE_ATTR] = ArrayAttr(rows)
