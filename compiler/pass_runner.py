"""The one way passes run: a context with every dialect, pass specs resolved by name, and
xDSL's PassPipeline applying them (with an optional per-pass callback for instrumentation).

The model API, the kernel compiler, the tuner and `ziggurat-opt` all run passes through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms import get_all_passes
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from compiler import registry
from compiler.errors import CompileError
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


def run_passes(
    ctx: Context, module: ModuleOp, specs: Sequence[str | ModulePass], verify_each: bool = False
) -> None:
    """Apply passes (specs or instances) in order. The module is verified once at the end (after
    every pass with `verify_each`): verifying costs more than most passes on big loop nests, and
    ziggurat-opt remains the tool for hunting a pass that breaks the IR."""
    failing = "?"

    def between(done: ModulePass | None, op: ModuleOp, upcoming: ModulePass | None) -> None:
        nonlocal failing
        if verify_each or upcoming is None:  # after every pass, or once at the end
            op.verify()
        if upcoming is not None:
            failing = upcoming.name

    try:
        passes = [make_pass(s) if isinstance(s, str) else s for s in specs]
        run_pipeline(ctx, module, passes, between)
    except (DiagnosticException, VerifyException) as e:
        raise CompileError(f"pass '{failing}' failed: {e}") from e
    except PASS_INPUT_ERRORS as e:
        raise CompileError(pass_input_error(failing, e)) from e
