"""`test-fail-pass`: a pass that fails on purpose, registered only by `ziggurat-opt`, so that
the driver's tests (reproducers, located diagnostics) need no real, possibly unfinished pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException


@dataclass(frozen=True)
class TestFailPass(ModulePass):
    """Fails on purpose, so driver tests need no real (possibly unfinished) pass.

    mode=error: a located pass error on the first op carrying `test.fail` (else the first op);
    mode=exception: a Python exception (an internal error); mode=invalid-ir: erases the first
    `func.return`, so the verifier rejects the pass's output.
    """

    name = "test-fail-pass"
    mode: str = "error"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ops = [o for o in op.walk() if o is not op]
        if self.mode == "exception":
            raise RuntimeError("test-fail-pass: deliberate internal error")
        if self.mode == "invalid-ir":
            for o in ops:
                if o.name == "func.return":
                    o.detach()
                    o.erase()
                    return
            return
        if self.mode != "error":
            raise PassFailedException(f"test-fail-pass: unknown mode '{self.mode}'")
        target = next((o for o in ops if "test.fail" in o.attributes), ops[0] if ops else op)
        msg = "test-fail-pass: deliberate failure"
        target.emit_error(msg, PassFailedException(msg))
