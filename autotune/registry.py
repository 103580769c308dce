"""The tuner's passes, by name, for the command-line layer to merge into the pass registry.

Lazy `module:Class` specs like compiler/registry.py's, so that listing passes imports nothing.
"""

from __future__ import annotations

PASSES: dict[str, str] = {
    # give every kernel its best measured schedule (tuning missing tasks first with trials=N)
    "autotune": "autotune.apply_pass:AutotunePass",
}
