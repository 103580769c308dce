"""The executable interface the GPU runtimes share with the CPU's compiled program."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class DeviceProgram:
    """A loaded program: `function("main")(*inputs, *outputs)` runs @main on numpy arrays, as
    compiler/backends/llvm_cpu's programs do, so CompiledModel runs either."""

    def run(self, *arrays: np.ndarray) -> None:
        raise NotImplementedError

    def function(self, name: str) -> Callable[..., None]:
        """The callable for `name` (only "main"): `(*inputs, *outputs)`, numpy arrays."""
        if name != "main":
            raise KeyError(f"no function {name!r}; have ['main']")

        def main(*arrays: np.ndarray) -> None:
            self.run(*arrays)

        return main
