"""The layers point down and nothing imports in a circle (README, "Architecture").

Every import is counted, function-local ones included, and so are the lazy `module:Class`
strings of the pass registries: a lower layer must not name a higher one even lazily.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("dialects", "passes", "compiler", "autotune")

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # (layer, module prefixes), lowest first; a module belongs to its longest matching prefix
    ("dialects", ("dialects",)),
    ("passes.analysis", ("passes.analysis",)),
    ("passes.schedule", ("passes.schedule",)),
    ("passes.transforms", ("passes.transforms", "passes")),
    ("passes.conversions", ("passes.conversions",)),
    ("compiler", ("compiler",)),
    ("autotune", ("autotune",)),
    ("cli", ("compiler.cli",)),
]
SIBLINGS = {frozenset({"passes.transforms", "passes.conversions"})}
"""Layers at the same height: neither may import the other (MLIR's Dialect/X/Transforms and
Conversion/XToY split); conversions take what they share with transforms from below."""

_SPEC = re.compile(r"^((?:{})(?:\.\w+)+):\w+$".format("|".join(PACKAGES)))


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = f.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            mods[name] = f
    return mods


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of the four packages that `name` imports or names in a `module:Class` spec."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:  # `from pkg import module` imports the module
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if m := _SPEC.match(node.value):
                found.add(m.group(1))
    return {m for m in found if m.split(".")[0] in PACKAGES and m != name}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best >= 0, f"{module} belongs to no declared layer"
    return best


def _height(i: int) -> int:
    """Layers in SIBLINGS share a height."""
    name = LAYERS[i][0]
    for group in SIBLINGS:
        if name in group:
            return min(j for j, (n, _) in enumerate(LAYERS) if n in group)
    return i


GRAPH = nx.DiGraph()
for _name, _path in MODULES.items():
    GRAPH.add_node(_name)
    for _target in _imports(_name, _path):
        GRAPH.add_edge(_name, _target)


def test_every_module_has_a_layer():
    for m in MODULES:
        layer_of(m)


def test_layers_only_point_down():
    wrong = []
    for src, dst in GRAPH.edges:
        a, b = layer_of(src), layer_of(dst)
        if a == b:
            continue
        if _height(b) >= _height(a):
            wrong.append(f"{src} ({LAYERS[a][0]}) imports {dst} ({LAYERS[b][0]})")
    assert not wrong, "imports of a higher or sibling layer:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles():
    cycles = [c for c in nx.simple_cycles(GRAPH) if len(c) > 1]
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_the_checker_sees_violations(tmp_path):
    """The rules catch what they claim to (a checker that passes everything would be useless)."""
    assert _height(layer_of("passes.transforms.tile")) < _height(layer_of("autotune.tuner"))
    assert layer_of("compiler.cli.main") > layer_of("autotune.tuner") > layer_of("compiler.model")
    assert _height(layer_of("passes.conversions.x")) == _height(layer_of("passes.transforms.x"))
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from compiler.model import lower\n\nX = 'autotune.tuner:Tuner'\n"
    )
    assert _imports("dialects.probe", probe) == {"compiler.model", "autotune.tuner"}


SEPARATE_LOWERINGS = ("passes.conversions.linalg_to_loops", "passes.conversions.linalg_to_gpu")
"""The CPU and GPU lowerings are siblings: what both need is in passes.conversions.loop_codegen
(as IREE's Codegen/Common serves LLVMCPU and LLVMGPU), which imports neither."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_lowerings_share_loop_codegen_and_not_each_other():
    shared = "passes.conversions.loop_codegen"
    wrong = [
        f"{src} imports {dst}"
        for src, dst in GRAPH.edges
        for target in SEPARATE_LOWERINGS
        if _within(dst, target)
        and not _within(src, target)
        and any(_within(src, p) for p in (*SEPARATE_LOWERINGS, shared))
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_private_names_across_packages():
    """`from X import _name`, X a module of another package of ours, reaches into X's
    internals (private names of xDSL and onnx that we work around are another matter)."""
    wrong = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and not node.level and node.module):
                continue
            if node.module.split(".")[0] not in PACKAGES:
                continue
            is_package = (REPO / node.module.replace(".", "/") / "__init__.py").exists()
            owner = node.module if is_package else node.module.rpartition(".")[0]
            if _within(package, owner):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private:
                wrong.append(f"{name}: from {node.module} import {', '.join(private)}")
    assert not wrong, "\n".join(sorted(wrong))
