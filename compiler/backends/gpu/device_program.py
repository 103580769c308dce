"""The executable interface the GPU runtimes share with the CPU's compiled program."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class DeviceProgram:
    """A loaded program: `function("main")(*inputs, *outputs)` runs @main on numpy arrays, as
    compiler/backends/llvm_cpu's programs do, so CompiledModel runs either."""

    def run(self, *arrays: np.ndarray) -> None:
        raise NotImplementedError

    def copy_in(self, inputs: list[np.ndarray]) -> None:
        """Copy @main's inputs to the device and wait (what `run` does first)."""
        raise NotImplementedError

    def launch_all(self, times: int = 1) -> float:
        """Run @main's launch sequence `times` times back to back on what the device holds (no
        copies), wait, and return the device seconds it took: a model's latency once its inputs
        are resident, as a timing loop or the tuner's runner wants it."""
        raise NotImplementedError

    def read_inputs(self) -> list[np.ndarray]:
        """The input buffers as the device holds them now (a kernel under test may write any of
        its arguments: the tuner's runner reads them all back)."""
        raise NotImplementedError

    def close(self) -> None:
        """Free the device memory now rather than when collected (it cannot run after)."""

    def function(self, name: str) -> Callable[..., None]:
        """The callable for `name` (only "main"): `(*inputs, *outputs)`, numpy arrays."""
        if name != "main":
            raise KeyError(f"no function {name!r}; have ['main']")

        def main(*arrays: np.ndarray) -> None:
            self.run(*arrays)

        return main
