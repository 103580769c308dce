"""Every dialect and pass of ziggurat, all layers merged: what `ziggurat-opt` registers, and the
`xdsl.universe` entry point through which stock `xdsl-opt` sees them.

The merge happens here, at the top layer, because the tuner's passes (autotune/registry.py) sit
above the compiler's (compiler/registry.py), which may not name them.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.universe import Universe

from autotune import registry as autotune_registry
from compiler import registry

PASSES: dict[str, str] = {**registry.PASSES, **autotune_registry.PASSES}
"""Pass name -> `module:Class`, every layer."""


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    return registry.pass_factories(PASSES)


def _renamed(factory: Callable[[], type[ModulePass]], alias: str) -> Callable[[], type[ModulePass]]:
    """A factory of `factory`'s pass under the name `alias`: xDSL parses `-p alias{...}` only
    into a class whose `name` is `alias` ("Spec name mismatch" otherwise)."""

    def load() -> type[ModulePass]:
        cls = factory()
        return type(cls.__name__, (cls,), {"name": alias, "__doc__": cls.__doc__})

    return load


UNIVERSE = Universe(
    all_dialects=registry.dialect_factories(),
    all_passes={
        registry.UNIVERSE_ALIASES.get(n, n): (
            _renamed(f, registry.UNIVERSE_ALIASES[n]) if n in registry.UNIVERSE_ALIASES else f
        )
        for n, f in pass_factories().items()
    },
)
