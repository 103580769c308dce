"""The one way passes run: a context with every dialect, pass specs resolved by name, and
xDSL's PassPipeline applying them (with an optional per-pass callback for instrumentation).

The model API, the kernel compiler, the tuner and `ziggurat-opt` all run passes through here.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.traits import SymbolOpInterface, SymbolTable
from xdsl.transforms import get_all_passes
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from compiler import compile_timing, registry
from compiler.errors import CompileError
from compiler.instrumentation import Instrumentation
from passes.analysis.kernel_access import KernelAnalysisError

PASS_INPUT_ERRORS: tuple[type[Exception], ...] = (KernelAnalysisError, NotImplementedError)
"""What a pass raises for input it does not handle (a kernel outside what the loop generator
takes, IR of another level, a construct not implemented): user errors naming the pass, reported
like its diagnostics (DiagnosticException), not as bugs."""


def pass_input_error(pass_name: str, error: Exception) -> str:
    """The one-line message of a PASS_INPUT_ERRORS exception raised by pass `pass_name`."""
    why = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, NotImplementedError):
        return f"pass '{pass_name}' does not support this input" + (f": {why}" if why else "")
    return f"pass '{pass_name}' cannot handle this input: {why or type(error).__name__}"


PassCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]
"""xDSL's PassPipeline callback: (pass just run or None, module, next pass or None)."""


def make_context() -> Context:
    """A context with every xDSL dialect and ours, loaded lazily."""
    ctx = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        # llvm.extractelement & co. (xDSL lacks them) load with `llvm`
        ctx.register_dialect(name, registry.llvm_with_extras if name == "llvm" else factory)
    for name, factory in registry.dialect_factories().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def make_pass(spec: str, passes: Mapping[str, str] | None = None) -> ModulePass:
    """One pass from a spec such as `tile{sizes=4,4}`: ours (`passes`, by default the compiler's
    registry) first, then xDSL's."""
    table = registry.PASSES if passes is None else passes
    (arg,) = parse_pipeline(spec)
    if arg.name in table:
        cls = registry.load_pass(table[arg.name])
    else:
        xdsl_passes = get_all_passes()
        if arg.name not in xdsl_passes:
            raise CompileError(f"unknown pass '{arg.name}'")
        cls = xdsl_passes[arg.name]()
    return cls.from_pass_spec(arg)


def run_pipeline(
    ctx: Context,
    module: ModuleOp,
    passes: Sequence[ModulePass],
    callback: PassCallback | None = None,
) -> None:
    """Apply pass instances in order through xDSL's PassPipeline (callback after each pass)."""
    PassPipeline(tuple(passes), callback).apply(ctx, module)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (back on after it, if it was on).

    Passes build and drop many small objects; the collections they trigger scan every IR object
    alive (the whole model) again and again, about a third of the time of the llvm-dialect
    lowering. The garbage a pipeline leaves is collected after it, as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def symbol_tables_cached() -> Iterator[None]:
    """xDSL's symbol lookups answered from a table built once per symbol table, inside the
    block, where the IR must not change (verification): xDSL scans the table's ops for every
    lookup, and verifying a call looks its callee up, so verifying a model with a few hundred
    kernels cost time quadratic in the kernels (seconds)."""
    saved = SymbolTable.__dict__["lookup_symbol"]
    scan = SymbolTable.lookup_symbol
    tables: dict[int, dict[str, Operation]] = {}

    def lookup(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
        if isinstance(name, SymbolRefAttr) and name.nested_references.data:
            return scan(op, name)
        anchor: Operation | None = op
        while anchor is not None and not anchor.has_trait(SymbolTable):
            anchor = anchor.parent_op()
        if anchor is None:
            return scan(op, name)  # raises as xDSL does
        table = tables.get(id(anchor))
        if table is None:
            table = {}
            for o in anchor.regions[0].block.ops:
                if (trait := o.get_trait(SymbolOpInterface)) is not None:
                    table.setdefault(trait.get_sym_attr_name(o).data, o)  # the first, as a scan
            tables[id(anchor)] = table
        if isinstance(name, SymbolRefAttr):
            name = name.root_reference
        return table.get(name if isinstance(name, str) else name.data)

    SymbolTable.lookup_symbol = staticmethod(lookup)  # type: ignore[method-assign]
    try:
        yield
    finally:
        SymbolTable.lookup_symbol = saved  # type: ignore[method-assign]


def run_passes(
    ctx: Context,
    module: ModuleOp,
    specs: Sequence[str | ModulePass],
    verify_each: bool = False,
    verify: bool = True,
) -> None:
    """Apply passes (specs or instances) in order. The module is verified once at the end (after
    every pass with `verify_each`; not at all with `verify=False`, for IR that LLVM verifies
    next anyway): verifying costs more than most passes on big loop nests, and ziggurat-opt
    remains the tool for hunting a pass that breaks the IR."""
    failing = "?"
    timer = compile_timing.active()
    timing = None if timer is None else Instrumentation(sys.stderr, timing=True, clock=timer.clock)
    verify_s = 0.0

    def between(done: ModulePass | None, op: ModuleOp, upcoming: ModulePass | None) -> None:
        nonlocal failing, verify_s
        if timing is not None:
            timing(done, op, upcoming)
        if verify_each or (upcoming is None and verify):  # after every pass, or at the end
            t0 = timer.clock() if timer is not None else 0.0
            with symbol_tables_cached():
                op.verify()
            verify_s += timer.clock() - t0 if timer is not None else 0.0
        if upcoming is not None:
            failing = upcoming.name

    try:
        passes = [make_pass(s) if isinstance(s, str) else s for s in specs]
        if timing is not None:
            timing.begin(tuple(passes))
        with gc_paused():
            run_pipeline(ctx, module, passes, between)
        if timer is not None and timing is not None:
            timer.record_pipeline(timing.pass_seconds(), verify_s)
    except (DiagnosticException, VerifyException) as e:
        raise CompileError(f"pass '{failing}' failed: {e}") from e
    except PASS_INPUT_ERRORS as e:
        raise CompileError(pass_input_error(failing, e)) from e
