"""convert-func-to-llvm: func.func/call/return -> llvm.func/call/return, bare-pointer ABI.

Memref arguments become one `!llvm.ptr` each and index becomes i64, so `@main` is
`void main(ptr arg0, ..., ptr out0, ...)` as the runtime expects. Public functions get external
linkage; private ones internal linkage so LLVM may inline and drop them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp
from xdsl.ir import Attribute, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from passes.conversions.llvm_common import (
    convert_type,
    operand,
    replace,
    retype_block_args,
    rewrite_once,
)


def _result_type(types: Sequence[Attribute]) -> Attribute:
    if not types:
        return llvm.LLVMVoidType()
    if len(types) > 1:
        raise NotImplementedError("functions with several results (use out-params)")
    return convert_type(types[0])


class FuncLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        ftype = op.function_type
        inputs = [convert_type(t) for t in ftype.inputs.data]
        output = _result_type(ftype.outputs.data)
        body = Region()
        op.body.move_blocks(body)
        if (entry := body.blocks.first) is not None:
            retype_block_args(entry)
            linkage = (
                "internal"
                if op.sym_visibility and op.sym_visibility.data == "private"
                else "external"
            )
        else:
            linkage = "external"
        extra: dict[str, Attribute] = {}
        if op.arg_attrs is not None:
            # keep user attributes (e.g. ziggurat.name) for tools; translation ignores unknown ones
            extra["arg_attrs"] = ArrayAttr(
                [DictionaryAttr(dict(a.data)) for a in op.arg_attrs.data]
            )
        new = llvm.FuncOp(
            op.sym_name,
            llvm.LLVMFunctionType(inputs, output),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
        )
        if extra:
            new.properties.update(extra)
        rewriter.replace(op, new)


class ReturnLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        if len(op.arguments) > 1:
            raise NotImplementedError("func.return with several values")
        value = operand(rewriter, op, op.arguments[0]) if op.arguments else None
        rewriter.replace(op, llvm.ReturnOp(value))


class CallLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter) -> None:
        args = [operand(rewriter, op, v) for v in op.arguments]
        ret = _result_type(list(op.result_types))
        call = llvm.CallOp(
            op.callee,
            *args,
            return_type=None if isinstance(ret, llvm.LLVMVoidType) else ret,
        )
        replace(rewriter, op, [call], [call.returned] if op.results else [])


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lower func to llvm with the bare-pointer memref calling convention."""

    name: ClassVar[str] = "convert-func-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [ReturnLowering(), CallLowering()])
        PatternRewriteWalker(FuncLowering(), apply_recursively=False).rewrite_module(op)
