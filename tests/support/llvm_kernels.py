"""Hand-written LOOP-level kernels (levels.md) shared by the LLVM backend tests and benches."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from dialects.llvm_extras import load_llvm_extras
from passes.conversions.convert_arith_to_llvm import ConvertArithToLLVMPass
from passes.conversions.convert_cf_to_llvm import ConvertCfToLLVMPass
from passes.conversions.convert_func_to_llvm import ConvertFuncToLLVMPass
from passes.conversions.convert_index_to_llvm import ConvertIndexToLLVMPass
from passes.conversions.convert_math_to_llvm import ConvertMathToLLVMPass
from passes.conversions.convert_memref_to_llvm import ConvertMemRefToLLVMPass
from passes.conversions.convert_vector_to_llvm import ConvertVectorToLLVMPass


def context() -> Context:
    ctx = Context()
    dialects = get_all_dialects()
    for name in ("builtin", "func", "arith", "math", "memref", "vector", "scf", "cf", "llvm"):
        ctx.load_dialect(dialects[name]())
    load_llvm_extras(ctx)
    return ctx


def lowering_passes() -> list[ModulePass]:
    """The LLVM part of the cpu-default pipeline (levels.md order)."""
    return [
        ConvertScfToCf(),
        ConvertVectorToLLVMPass(),
        ConvertMemRefToLLVMPass(),
        ConvertMathToLLVMPass(),
        ConvertArithToLLVMPass(),
        ConvertIndexToLLVMPass(),
        ConvertCfToLLVMPass(),
        ConvertFuncToLLVMPass(),
        ReconcileUnrealizedCastsPass(),
    ]


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def lower(text: str, first: Sequence[ModulePass] = ()) -> ModuleOp:
    """Parse LOOP-level MLIR and lower it to the LLVM level (after the passes `first`)."""
    ctx = context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    for p in [*first, *lowering_passes()]:
        p.apply(ctx, module)
    module.verify()
    return module


def apply(pass_: ModulePass, text: str) -> ModuleOp:
    """Parse `text` and apply one pass to it; the result must verify."""
    module = apply_all([pass_], text)
    module.verify()
    return module


def apply_all(passes: Sequence[ModulePass], text: str) -> ModuleOp:
    """Parse `text` and apply `passes` to it in order (the result is not verified)."""
    ctx = context()
    module = Parser(ctx, text).parse_module()
    for p in passes:
        p.apply(ctx, module)
    return module


def converted_ops(module: ModuleOp) -> list[str]:
    """The names of the ops inside the functions of `module`, in order, without the
    unrealized_conversion_casts that bridge a partial conversion, the functions themselves
    and the declarations."""
    return [
        op.name
        for fn in module.ops
        for op in fn.walk()
        if op is not fn and op.name != "builtin.unrealized_conversion_cast"
    ]


def matmul_mlir(
    m: int = 64, n: int = 64, k: int = 64, mr: int = 4, nr: int = 32, vw: int = 16
) -> str:
    """C = A @ B, register-blocked: mr x nr tile of C in mr*nr/vw vector accumulators (iter_args)."""
    assert m % mr == 0 and n % nr == 0 and nr % vw == 0
    nv = nr // vw
    vt = f"vector<{vw}xf32>"
    accs = [(r, v) for r in range(mr) for v in range(nv)]
    lines = [
        f"func.func @matmul(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>) {{",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        f"  %cm = arith.constant {m} : index",
        f"  %cn = arith.constant {n} : index",
        f"  %ck = arith.constant {k} : index",
        f"  %cmr = arith.constant {mr} : index",
        f"  %cnr = arith.constant {nr} : index",
        f"  %zero = arith.constant dense<0.0> : {vt}",
    ]
    lines += [f"  %r{r} = arith.constant {r} : index" for r in range(mr)]
    lines += [f"  %v{v} = arith.constant {v * vw} : index" for v in range(nv)]
    lines += [
        "  scf.for %i = %c0 to %cm step %cmr {",
        "    scf.for %j = %c0 to %cn step %cnr {",
    ]
    lines += [f"      %i{r} = arith.addi %i, %r{r} : index" for r in range(mr)]
    lines += [f"      %j{v} = arith.addi %j, %v{v} : index" for v in range(nv)]
    init = ", ".join(f"%a{r}_{v} = %zero" for r, v in accs)
    types = ", ".join([vt] * len(accs))
    lines.append(
        f"      %res:{len(accs)} = scf.for %kk = %c0 to %ck step %c1 iter_args({init}) -> ({types}) {{"
    )
    lines += [
        f"        %b{v} = vector.load %B[%kk, %j{v}] : memref<{k}x{n}xf32>, {vt}" for v in range(nv)
    ]
    for r in range(mr):
        lines.append(f"        %s{r} = memref.load %A[%i{r}, %kk] : memref<{m}x{k}xf32>")
        lines.append(f"        %x{r} = vector.broadcast %s{r} : f32 to {vt}")
        for v in range(nv):
            lines.append(f"        %n{r}_{v} = vector.fma %x{r}, %b{v}, %a{r}_{v} : {vt}")
    lines.append("        scf.yield " + ", ".join(f"%n{r}_{v}" for r, v in accs) + f" : {types}")
    lines.append("      }")
    for idx, (r, v) in enumerate(accs):
        lines.append(f"      vector.store %res#{idx}, %C[%i{r}, %j{v}] : memref<{m}x{n}xf32>, {vt}")
    lines += ["    }", "  }", "  func.return", "}"]
    return "\n".join(lines)
