"""What a model runnable from this process shares, compiled here or loaded from a package: its
input and output names, the input checks, and calling @main on aligned buffers.

A mixin over the fields `inputs`, `outputs` (compiler/tensor_spec.TensorSpec), `program` (with
`function(name)` and `parallel`) and `threads`; imports neither xDSL nor ONNX, so the lean
package runtime can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from compiler import parallel_runtime
from compiler.errors import InputError
from compiler.runtime import aligned_copy, aligned_empty
from compiler.tensor_spec import TensorSpec, check_inputs, results


class HostModel:
    """run/runner/names over `inputs`, `outputs`, `program` and `threads` (see the module)."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    threads: int

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        """The model's outputs (not the hidden lengths of data-dependent ones)."""
        return [s.name for s in self.outputs if not s.hidden]

    def _use_threads(self) -> None:
        if getattr(self.program, "parallel", False):
            parallel_runtime.set_num_threads(self.threads)

    def check_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """compiler/tensor_spec.py check_inputs: InputError for a wrong name, dtype, shape."""
        return check_inputs(self.inputs, feeds)

    @property
    def run_time_dims(self) -> bool:
        """Whether @main takes sizes at run time (`?` dims: one compile for every size)."""
        return any(s.run_time_dims for s in [*self.inputs, *self.outputs])

    def _buffers(
        self,
        feeds: Mapping[str, np.ndarray],
        output_shapes: Sequence[Sequence[int]] | None = None,
    ) -> tuple[list[Any], list[np.ndarray]]:
        args = [aligned_copy(a) for a in self.check_inputs(feeds)]
        if output_shapes is None:
            if any(s.run_time_dims for s in self.outputs):
                raise InputError(
                    "this model's outputs have run-time dims: run it through compile_symbolic, "
                    "which knows their sizes (or pass output_shapes)"
                )
            output_shapes = [s.shape for s in self.outputs]
        outs = [
            aligned_empty(tuple(shape), s.buffer_dtype)
            for s, shape in zip(self.outputs, output_shapes, strict=True)
        ]
        # @main's size arguments: each `?` dim of each buffer, inputs then outputs, in order
        sizes = [
            int(buf.shape[k])
            for s, buf in zip([*self.inputs, *self.outputs], [*args, *outs], strict=True)
            for k in s.run_time_dims
        ]
        return [*args, *outs, *sizes], outs

    def run(
        self,
        feeds: Mapping[str, np.ndarray],
        output_shapes: Sequence[Sequence[int]] | None = None,
    ) -> dict[str, np.ndarray]:
        """Outputs by name; InputError for a wrong input name, dtype or shape. A model with
        run-time dims needs its outputs' shapes (what compile_symbolic computes from the
        symbols)."""
        call, outs = self._buffers(feeds, output_shapes)
        self._use_threads()
        self.program.function("main")(*call)
        return self.results(outs)

    def results(self, outs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """The caller's view of @main's result buffers: widened outputs converted to their
        declared type (integers fit; float16 is rounded once), data-dependent outputs trimmed
        to their run-time length, the lengths themselves left out."""
        return results(self.outputs, outs)

    def runner(
        self,
        feeds: Mapping[str, np.ndarray],
        output_shapes: Sequence[Sequence[int]] | None = None,
    ) -> Callable[[], Any]:
        """A zero-argument callable that runs the model on fixed buffers (for timing)."""
        call, _ = self._buffers(feeds, output_shapes)
        fn = self.program.function("main")
        self._use_threads()
        return lambda: fn(*call)
