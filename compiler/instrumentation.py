"""Pass instrumentation for `ziggurat-opt`: IR printing, timing, statistics, reproducers.

Everything that watches a pipeline run lives here, driven by the one callback xDSL's
`PassPipeline` offers (`callback(previous_pass, module, next_pass)`), so the driver stays a
thin loop. All reports go to stderr (or a given stream): stdout carries only the output IR.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from io import StringIO
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer

REPRODUCER_KEY = "mlir_reproducer"
_RESOURCE_RE = re.compile(r"\{-#\s*external_resources\s*:.*?#-\}", re.DOTALL)
_PIPELINE_RE = re.compile(r'pipeline\s*:\s*"((?:[^"\\]|\\.)*)"')


def pass_display_name(p: ModulePass) -> str:
    """MLIR names passes in dumps by class (`Canonicalizer`); ours drop the `Pass` suffix."""
    cls = type(p).__name__
    return cls.removesuffix("Pass") or cls


def print_module(module: ModuleOp, *, generic: bool = False, debuginfo: bool = False) -> str:
    """Module as MLIR text, the same way the driver prints its output."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
    out.write("\n")
    return out.getvalue()


def count_ops(module: ModuleOp) -> int:
    """Number of operations nested in `module` (the module itself excluded)."""
    return sum(1 for _ in module.walk()) - 1


def pipeline_string(passes: Iterable[ModulePass]) -> str:
    """The `-p` string that rebuilds exactly these pass instances."""
    return ",".join(str(p.spec()) for p in passes)


@dataclass
class _PassRecord:
    """Accumulated wall time and op-count effect of one pipeline position."""

    name: str
    seconds: float = 0.0
    runs: int = 0
    ops_before: int = 0
    ops_after: int = 0


@dataclass
class PassFailure:
    """What the driver needs to report (and reproduce) a failing pass."""

    pass_: ModulePass
    index: int
    input_ir: str | None
    after_pass: bool
    """True when the pass ran but left IR that does not verify."""


@dataclass
class Instrumentation:
    """Callback object for `PassPipeline`; one per driver run, reused across input chunks."""

    stream: IO[str]
    print_before: frozenset[str] = frozenset()
    print_after: frozenset[str] = frozenset()
    print_before_all: bool = False
    print_after_all: bool = False
    print_after_change: bool = False
    print_generic: bool = False
    timing: bool = False
    statistics: bool = False
    keep_input: bool = False
    """Snapshot each pass's input IR, so a failure can be turned into a reproducer."""
    verify: Callable[[ModuleOp], None] | None = None
    """Run after every pass (verify-each); raising attributes the failure to that pass."""
    clock: Callable[[], float] = time.perf_counter
    """What pass timing reads: wall seconds, or CPU seconds (`time.process_time`)."""

    _records: list[_PassRecord] = field(default_factory=list[_PassRecord])
    _phases: dict[str, float] = field(default_factory=dict[str, float])
    _running: ModulePass | None = None
    _index: int = -1
    _started: float = 0.0
    _input_ir: str | None = None
    _before_text: str | None = None
    _ops_before: int = 0
    _verifying: bool = False

    # -- pipeline callback -------------------------------------------------------------------

    def begin(self, passes: tuple[ModulePass, ...]) -> None:
        """Start a pipeline run on one module (one input chunk)."""
        if not self._records:
            self._records = [_PassRecord(p.name) for p in passes]
        self._running = None
        self._index = -1
        self._verifying = False

    def __call__(
        self, previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
    ) -> None:
        now = self.clock()
        if previous is not None:
            self._after(previous, module, now)
        if next_pass is not None:
            self._before(next_pass, module)

    def _after(self, p: ModulePass, module: ModuleOp, now: float) -> None:
        rec = self._records[self._index]
        rec.seconds += now - self._started
        rec.runs += 1
        if self.statistics:
            rec.ops_before += self._ops_before
            rec.ops_after += count_ops(module)
        if self.verify is not None:
            self._verifying = True
            with self.phase("Verifier"):
                self.verify(module)
            self._verifying = False
        if self.print_after_all or p.name in self.print_after:
            self._dump("After", p, module)
        elif self.print_after_change:
            text = print_module(module, generic=self.print_generic)
            if text != self._before_text:
                self._dump("After", p, module, text)
        self._running = None

    def _before(self, p: ModulePass, module: ModuleOp) -> None:
        self._index += 1
        self._running = p
        if self.print_before_all or p.name in self.print_before:
            self._dump("Before", p, module)
        if self.print_after_change:
            self._before_text = print_module(module, generic=self.print_generic)
        if self.keep_input:
            self._input_ir = print_module(module, generic=True, debuginfo=True)
        if self.statistics:
            self._ops_before = count_ops(module)
        self._started = self.clock()

    def _dump(self, when: str, p: ModulePass, module: ModuleOp, text: str | None = None) -> None:
        if text is None:
            text = print_module(module, generic=self.print_generic)
        header = f"// -----// IR Dump {when} {pass_display_name(p)} ({p.name}) //----- //"
        self.stream.write(f"{header}\n{text}\n")
        self.stream.flush()

    # -- failures ----------------------------------------------------------------------------

    def failure(self) -> PassFailure | None:
        """The pass that was running when the pipeline raised, if any."""
        if self._running is None:
            return None
        return PassFailure(self._running, self._index, self._input_ir, self._verifying)

    # -- timing ------------------------------------------------------------------------------

    def phase(self, name: str) -> _Phase:
        """Context manager timing a non-pass phase (parsing, output) for the report."""
        return _Phase(self, name)

    def report(self) -> None:
        """Write the timing and statistics reports requested (after all chunks)."""
        if self.timing:
            self.stream.write(self._timing_report())
        if self.statistics:
            self.stream.write(self._statistics_report())
        self.stream.flush()

    def pass_seconds(self) -> list[tuple[str, float]]:
        """(pass name, wall seconds) of every pipeline position, in order."""
        return [(r.name, r.seconds) for r in self._records]

    def _timing_report(self) -> str:
        rows: list[tuple[float, str]] = []
        if "Parser" in self._phases:
            rows.append((self._phases["Parser"], "Parser"))
        rows += [(r.seconds, r.name) for r in self._records]
        rows += [(s, n) for n, s in self._phases.items() if n != "Parser"]
        return time_report("Execution time report", rows, sum(s for s, _ in rows))

    def _statistics_report(self) -> str:
        bar = "===" + "-" * 73 + "==="
        lines = [bar, "... Pass statistics report ...".center(len(bar)).rstrip(), bar]
        for r in self._records:
            lines.append(f"{r.name}")
            lines.append(f"  (S) {r.runs:6d} runs         - times the pass ran")
            lines.append(f"  (S) {r.ops_before:6d} ops-before   - operations before the pass")
            lines.append(f"  (S) {r.ops_after:6d} ops-after    - operations after the pass")
        return "\n".join(lines) + "\n\n"


def time_report(
    title: str, rows: list[tuple[float, str]], total: float, column: str = "Wall Time"
) -> str:
    """MLIR's `-mlir-timing` layout: wall seconds and percent of `total` per named row, then the
    total (`ziggurat-opt --timing` and `ziggurat compile --timing` print it)."""
    bar = "===" + "-" * 73 + "==="
    lines = [
        bar,
        title.center(len(bar)).rstrip(),
        bar,
        f"  Total Execution Time: {total:.4f} seconds",
        "",
        f"  {('----' + column + '----').ljust(17)}  ----Name----",
    ]
    for seconds, name in [*rows, (total, "Total")]:
        pct = 100.0 * seconds / total if total > 0 else 0.0
        lines.append(f"  {seconds:8.4f} ({pct:5.1f}%)  {name}")
    return "\n".join(lines) + "\n\n"


@dataclass
class _Phase:
    owner: Instrumentation
    name: str
    _t0: float = 0.0

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        phases = self.owner._phases
        phases[self.name] = phases.get(self.name, 0.0) + time.perf_counter() - self._t0


# -- reproducers ---------------------------------------------------------------------------


def write_reproducer(path: str, failure: PassFailure, reason: str) -> str:
    """Write the failing pass's input IR plus its pipeline (MLIR's reproducer format).

    Returns the one-line command that replays it.
    """
    pipeline = str(failure.pass_.spec())
    replay = f"ziggurat-opt {path} --run-reproducer"
    reason_lines = "".join(f"// {line}\n" for line in reason.strip().splitlines()[:5])
    escaped = pipeline.replace("\\", "\\\\").replace('"', '\\"')
    ir = failure.input_ir or ""
    with open(path, "w") as f:
        f.write(f"// ziggurat-opt reproducer: pass '{failure.pass_.name}' failed\n")
        f.write(reason_lines)
        f.write(f"// replay: {replay}\n")
        f.write(f"//     or: ziggurat-opt {path} -p '{pipeline}'\n")
        f.write(ir)
        f.write(
            "\n{-#\n  external_resources: {\n    "
            f'{REPRODUCER_KEY}: {{\n      pipeline: "builtin.module({escaped})",\n'
            "      disable_threading: true,\n      verify_each: true\n    }\n  }\n#-}\n"
        )
    return replay


def extract_reproducer(text: str) -> tuple[str, str | None]:
    """Split a reproducer into (IR with the resource block blanked out, pipeline or None).

    The block is replaced by as many newlines as it spans so line numbers stay valid;
    xDSL's parser does not accept `external_resources`, so this also makes the file parse.
    """
    pipeline: str | None = None

    def blank(m: re.Match[str]) -> str:
        nonlocal pipeline
        if REPRODUCER_KEY in m.group(0) and (pm := _PIPELINE_RE.search(m.group(0))):
            pipeline = re.sub(r"\\(.)", r"\1", pm.group(1))
        return "\n" * m.group(0).count("\n")

    stripped = _RESOURCE_RE.sub(blank, text)
    if pipeline is not None:
        inner = pipeline.strip()
        if inner.startswith("builtin.module(") and inner.endswith(")"):
            inner = inner[len("builtin.module(") : -1]
        pipeline = inner
    return stripped, pipeline
