"""LLVM dialect ops that xDSL 0.74 lacks, plus their llvmlite translation.

xDSL's `llvm` dialect has `llvm.insertelement` but no `llvm.extractelement`, no
`llvm.fptosi`/`llvm.fptoui`/`llvm.uitofp` and no `llvm.atomicrmw`, and its llvmlite translator
does not know them either.
They are defined here (same names and syntax as MLIR) so vector.extract and arith casts can lower;
`TRANSLATIONS` is consulted by `compiler.backends.llvm_cpu` before xDSL's translator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from llvmlite import ir
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, VectorType
from xdsl.dialects.llvm import GenericCastOp, LLVMPointerType
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    RangeOf,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect


@irdl_op_definition
class ExtractElementOp(IRDLOperation):
    """`llvm.extractelement`: one lane of a 1-D vector."""

    name = "llvm.extractelement"

    ELEMENT: ClassVar = VarConstraint("ELEMENT", AnyAttr())
    VECTOR: ClassVar = VarConstraint(
        "VECTOR_T",
        VectorType.constr(ELEMENT, shape=ArrayAttr.constr(RangeOf(IntAttr).of_length(1))),
    )

    vector = operand_def(VECTOR)
    position = operand_def()
    res = result_def(ELEMENT)

    assembly_format = "$vector `[` $position `:` type($position) `]` attr-dict `:` type($vector)"

    traits = traits_def(NoMemoryEffect())

    def __init__(self, vector: Operation | SSAValue, position: Operation | SSAValue):
        vtype = SSAValue.get(vector).type
        assert isinstance(vtype, VectorType)
        super().__init__(operands=[vector, position], result_types=[vtype.element_type])


@irdl_op_definition
class FPToSIOp(GenericCastOp):
    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(GenericCastOp):
    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(GenericCastOp):
    name = "llvm.uitofp"


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """`llvm.atomicrmw`: read-modify-write of one memory word, atomically (MLIR's syntax:
    `llvm.atomicrmw xchg %ptr, %val acq_rel : !llvm.ptr, !llvm.ptr`)."""

    name = "llvm.atomicrmw"

    T: ClassVar = VarConstraint("T", AnyAttr())

    ptr = operand_def(LLVMPointerType)
    val = operand_def(T)
    res = result_def(T)
    bin_op = prop_def(StringAttr)
    ordering = prop_def(StringAttr)

    def __init__(
        self,
        bin_op: str,
        ptr: Operation | SSAValue,
        val: Operation | SSAValue,
        ordering: str = "acq_rel",
    ):
        super().__init__(
            operands=[ptr, val],
            result_types=[SSAValue.get(val).type],
            properties={"bin_op": StringAttr(bin_op), "ordering": StringAttr(ordering)},
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.bin_op.data} ")
        printer.print_operand(self.ptr)
        printer.print_string(", ")
        printer.print_operand(self.val)
        printer.print_string(f" {self.ordering.data} : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(", ")
        printer.print_attribute(self.val.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        bin_op = parser.parse_identifier()
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        ordering = parser.parse_identifier()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        val_type = parser.parse_type()
        resolved = parser.resolve_operands([ptr, val], [ptr_type, val_type], parser.pos)
        return cls(bin_op, resolved[0], resolved[1], ordering)


Translation = Callable[[Operation, ir.IRBuilder, dict[SSAValue, ir.Value]], None]


def _atomicrmw(op: Operation, b: ir.IRBuilder, vals: dict[SSAValue, ir.Value]) -> None:
    assert isinstance(op, AtomicRMWOp)
    vals[op.res] = b.atomic_rmw(op.bin_op.data, vals[op.ptr], vals[op.val], op.ordering.data)


def _extractelement(op: Operation, b: ir.IRBuilder, vals: dict[SSAValue, ir.Value]) -> None:
    assert isinstance(op, ExtractElementOp)
    vals[op.res] = b.extract_element(vals[op.vector], vals[op.position])


def _cast(name: str) -> Translation:
    def translate(op: Operation, b: ir.IRBuilder, vals: dict[SSAValue, ir.Value]) -> None:
        vals[op.results[0]] = getattr(b, name)(
            vals[op.operands[0]], convert_type(op.results[0].type)
        )

    return translate


TRANSLATIONS: dict[type[Operation], Translation] = {
    AtomicRMWOp: _atomicrmw,
    ExtractElementOp: _extractelement,
    FPToSIOp: _cast("fptosi"),
    FPToUIOp: _cast("fptoui"),
    UIToFPOp: _cast("uitofp"),
}


def load_llvm_extras(ctx: Context) -> None:
    """Register the extra ops (named `llvm.*`) in a context that already has `llvm`."""
    for op in LLVMExtras.operations:
        if ctx.get_optional_op(op.name) is None:
            ctx.load_op(op)


def llvm_with_extras() -> Dialect:
    """xDSL's `llvm` dialect plus the extra ops: a drop-in factory for the `llvm` registration,
    so the extras load lazily with `llvm` (importing it eagerly costs ~0.1 s per ziggurat-opt run)."""
    from xdsl.dialects.llvm import LLVM

    return Dialect(
        "llvm",
        [*LLVM.operations, *LLVMExtras.operations],
        [*LLVM.attributes, *LLVMExtras.attributes],
    )


LLVMExtras = Dialect(
    "llvm_extras", [AtomicRMWOp, ExtractElementOp, FPToSIOp, FPToUIOp, UIToFPOp], []
)
