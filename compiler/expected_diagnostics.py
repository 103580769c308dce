"""`--verify-diagnostics`: MLIR's `// expected-error@+N {{message}}` annotations, checked
against the diagnostics a run produced (every one expected, every expectation produced)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from compiler.diagnostics import Diag

_EXPECT_RE = re.compile(
    r"//.*?expected-(error|warning|remark|note)(-re)?"
    r"(?:\s*@(above|below|unknown|[+-]?\d+))?\s*\{\{(.*)\}\}"
)


@dataclass
class Expectation:
    """One `// expected-<severity>[@where] {{message}}` annotation."""

    severity: str
    pattern: str
    regex: bool
    line: int | None
    """Line the diagnostic is expected on; None for `@unknown`."""
    source_line: int
    matched: bool = False

    def matches(self, d: Diag) -> bool:
        if self.matched or d.severity != self.severity or d.line != self.line:
            return False
        if self.regex:
            return re.search(self.pattern, d.message) is not None
        return self.pattern in d.message


def parse_expectations(lines: list[str]) -> list[Expectation]:
    """Collect the annotations of a whole file (line numbers are the file's)."""
    found: list[tuple[int, re.Match[str]]] = []
    for i, text in enumerate(lines, start=1):
        if m := _EXPECT_RE.search(text):
            found.append((i, m))
    annotated = {i for i, _ in found}

    def is_plain(i: int) -> bool:
        """Lines holding only an annotation are skipped by @above/@below."""
        stripped = lines[i - 1].strip()
        return not (i in annotated and stripped.startswith("//"))

    out: list[Expectation] = []
    for i, m in found:
        severity, re_flag, where, pattern = m.groups()
        line: int | None
        if where is None:
            line = i
        elif where == "unknown":
            line = None
        elif where == "above":
            line = next((j for j in range(i - 1, 0, -1) if is_plain(j)), i - 1)
        elif where == "below":
            line = next((j for j in range(i + 1, len(lines) + 1) if is_plain(j)), i + 1)
        elif where[0] in "+-":
            line = i + int(where)
        else:
            line = int(where)
        out.append(Expectation(severity, pattern, re_flag is not None, line, i))
    return out


def check_expectations(
    diags: list[Diag], expected: list[Expectation], input_name: str, source: dict[str, list[str]]
) -> list[str]:
    """MLIR's verifier: every diagnostic expected, every expectation produced."""
    errors: list[str] = []
    for d in diags:
        if d.severity == "note" and not any(e.severity == "note" for e in expected):
            continue
        hit = next((e for e in expected if e.matches(d)), None)
        if hit is not None:
            hit.matched = True
            continue
        unexpected = dataclasses.replace(d, message=f"unexpected {d.severity}: {d.message}")
        unexpected.severity, unexpected.notes = "error", []
        errors.append(unexpected.render(source))
    for e in expected:
        if not e.matched:
            where = f"line {e.line}" if e.line is not None else "an unknown location"
            errors.append(
                f"{input_name}:{e.source_line}: error: expected {e.severity} "
                f'"{e.pattern}" was not produced (expected on {where})'
            )
    return errors
