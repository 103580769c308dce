"""A model whose inputs have symbolic dimensions (batch, sequence, past length), run at any size
within bounds the user gives: compiled once for every size where its operators allow, else once
per binding of its symbols.

    model = compile_symbolic("gpt2.onnx", dims={"batch": (1, 8), "seq": (1, 512)})
    model.run({"input_ids": ids, ...})   # sizes read from the arrays, checked, then dispatched

The symbols are read from the model's inputs (ONNX `dim_param`s; an unnamed unknown dim is
called `INPUT.AXIS`), every call binds them from the arrays it is given (a symbol shared by two
inputs must agree; static dims must match; a size outside the bounds is one InputError naming
the symbol, the input and the axis; the model's own bounds, a table of learned positions read at
`Range(past, past + seq)`, come from compiler/frontend/symbolic_shapes.py and are checked too,
naming the table and the node).

**Once for every size** (`once()`): where every operator that reads a tensor whose shape depends
on the symbols is compiled for run-time sizes (compiler/frontend/run_time_dims.py), the model is
imported with those dims `?`; they stay `?` through the tensor, buffer and loop levels (kernels
as static blocks, passes/conversions/linalg_to_loops/dynamic_blocks.py) and @main takes their
sizes as arguments; the outputs' shapes come from the symbolic shape analysis. One compile (or
one load from the compile cache) then serves every size.

**Once per size** otherwise (`one_compile_refused` names the operator): the specialization for a
binding is taken from memory, else from the compile cache (compiler/compile_cache.py: a size seen
by any earlier process is a load), else compiled, as torch.compile's recompile-per-shape and
TensorRT's per-profile engines do.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from compiler.compile_cache import cached_compile
from compiler.errors import CompileError, InputError, ZigguratError
from compiler.frontend.onnx import load_model
from compiler.frontend.onnx_graph import op_key, subgraphs
from compiler.frontend.onnx_signature import graph_signature, graph_skeleton
from compiler.frontend.run_time_dims import RUN_TIME, RUN_TIME_DIM_OPS
from compiler.frontend.symbolic_shapes import (
    Poly,
    SymbolicShapes,
    analyze,
    input_dim_names,
    parse_dim,
)

Dim = int | str
"""A dimension of an input: its size, or the name of the symbol it is."""
DimSpec = int | tuple[int, int | None]
"""What `dims` gives a symbol: a fixed size, or bounds (lo, hi), hi None for no upper bound."""

MAX_LOADED = 16
"""Specializations kept loaded at once (the least recently used beyond it are closed; the
compile cache still holds them)."""


class DimError(ZigguratError):
    """`dims` names a symbol the model does not have, or gives it impossible bounds."""


@dataclass(frozen=True)
class Bound:
    lo: int
    hi: int | None

    def __str__(self) -> str:
        return f"{self.lo}..{'' if self.hi is None else self.hi}"

    def holds(self, size: int) -> bool:
        return size >= self.lo and (self.hi is None or size <= self.hi)


def input_dims(model: Any, given: Mapping[str, list[int]] | None = None) -> dict[str, list[Dim]]:
    """Each graph input (not an initializer) of `model` (a ModelProto, or a path, whose inputs
    are read without its weights) -> its dims: sizes, or symbol names (an unknown dim without a
    `dim_param` is called `INPUT.AXIS`). An input declared without a shape takes `given`'s."""
    inputs, _, inits = _signature(model)
    return _dims_of(inputs, inits, given)


def _dims_of(
    inputs: list[onnx.ValueInfoProto], inits: set[str], given: Mapping[str, list[int]] | None
) -> dict[str, list[Dim]]:
    """input_dims from a signature already read."""
    dims: dict[str, list[Dim]] = {}
    for name, ds in input_dim_names(inputs, inits).items():
        if ds is None:
            if given is None or name not in given:
                raise DimError(f"input '{name}' has no shape; pass it in input_shapes")
            ds = list(given[name])
        dims[name] = ds
    return dims


def _signature(
    model: Any,
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto], set[str]]:
    """(graph inputs, outputs, initializer names): from the file without its weights where
    it reads so, else from the loaded model (load_model's errors for a bad one)."""
    if isinstance(model, (str, Path)):
        found = graph_signature(model)
        if found is not None:
            return found
    proto = load_model(model)
    graph = proto.graph
    return list(graph.input), list(graph.output), {t.name for t in graph.initializer}


def _bounds(
    symbols: dict[str, list[tuple[str, int]]],
    dims: Mapping[str, DimSpec],
    fixed: Mapping[str, int],
) -> dict[str, Bound]:
    """Every symbol's bounds: from `dims`, else from `fixed` (a size input_shapes implies),
    else 0.. (a dimension may be 0: an empty KV cache)."""
    unknown = sorted(set(dims) - set(symbols))
    if unknown:
        raise DimError(
            f"dims names {', '.join(repr(u) for u in unknown)}, which the model's inputs do not "
            f"have; its symbols are {', '.join(repr(s) for s in symbols) or 'none'}"
        )
    out = {s: Bound(fixed[s], fixed[s]) if s in fixed else Bound(0, None) for s in symbols}
    for name, spec in dims.items():
        hi: int | None
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            lo, hi = int(spec), int(spec)
        elif isinstance(spec, tuple) and len(spec) == 2:
            lo, hi = int(spec[0]), None if spec[1] is None else int(spec[1])
        else:
            raise DimError(f"dims['{name}'] must be a size or a (lo, hi) pair, got {spec!r}")
        if lo < 0 or (hi is not None and hi < lo):
            raise DimError(f"dims['{name}'] = {spec!r}: bounds must satisfy 0 <= lo <= hi")
        if name in fixed and not lo <= fixed[name] <= (hi if hi is not None else fixed[name]):
            raise DimError(
                f"input_shapes fix '{name}' to {fixed[name]}, outside dims['{name}'] = {spec!r}"
            )
        out[name] = Bound(lo, hi) if name not in fixed else Bound(fixed[name], fixed[name])
    return out


def _others_at_least(symbol: str, involved: set[str], lows: Mapping[str, int]) -> str:
    """The least sizes of the limit's other symbols that its bound on `symbol` assumes."""
    others = [f"{o} = {lows[o]}" for o in sorted(involved - {symbol}) if lows.get(o)]
    return f" (with {', '.join(others)})" if others else ""


def _graph(model: Any) -> onnx.GraphProto:
    """The model's graph for the shape analysis: a file's without reading its weights."""
    if isinstance(model, (str, Path)):
        found = graph_skeleton(model)
        if found is not None:
            return found
    return load_model(model).graph


def _spell(dims: list[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _evaluate(expression: str, sizes: Mapping[str, int]) -> int | None:
    """The value of a symbol that exporters spell as arithmetic over other symbols
    (`past + seq`, `2*seq`), or None when it is a plain name or names an unbound symbol."""
    poly = parse_dim(expression, set(sizes) - {expression})
    return None if poly == Poly.symbol(expression) else poly.evaluate(sizes)


def _dtype_name(elem_type: int) -> str:
    try:
        return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))
    except (KeyError, TypeError, ValueError):  # the import says what is wrong with it
        return f"element type {elem_type}"


class SymbolicModel:
    """An ONNX model with symbolic input dims, compiled per binding of its symbols on first use
    (see the module). `run`, `input_names` and `output_names` as a CompiledModel's."""

    def __init__(
        self,
        model: str | Path | Any,
        dims: Mapping[str, DimSpec] | None = None,
        input_shapes: Mapping[str, list[int]] | None = None,
        max_loaded: int = MAX_LOADED,
        one_compile: bool | None = None,
        **options: Any,
    ) -> None:
        """`options`: cached_compile's (target, optimize, schedules, threads, preset, layout,
        cache), the same for every specialization. `one_compile`: True compiles once for every
        size (a CompileError where the model has an operator not compiled for run-time sizes),
        False once per size, None (the default) once where the model allows, else per size
        (`one_compile_refused` says why)."""
        self.model = model
        self.input_shapes = dict(input_shapes or {})
        graph = _graph(model)  # read once, without the weights: a path's parse may be slow
        inputs, outputs = list(graph.input), list(graph.output)
        inits = {t.name for t in graph.initializer}
        self.input_dims = _dims_of(inputs, inits, self.input_shapes)
        self.output_names = [o.name for o in outputs]
        self.input_dtypes = {
            i.name: _dtype_name(i.type.tensor_type.elem_type)
            for i in inputs
            if i.name in self.input_dims
        }
        self.symbols: dict[str, list[tuple[str, int]]] = {}
        """Each symbol -> the (input, axis) pairs where it appears."""
        for name, ds in self.input_dims.items():
            for axis, d in enumerate(ds):
                if isinstance(d, str):
                    self.symbols.setdefault(d, []).append((name, axis))
        fixed = self._fixed_by(self.input_shapes)
        self.bounds = _bounds(self.symbols, dict(dims or {}), fixed)
        self.shapes: SymbolicShapes = analyze(graph)
        self._nodes = [
            (op_key(n), n.name or f"#{k}", list(n.input), bool(subgraphs(n)))
            for k, n in enumerate(graph.node)
        ]
        """Each node's operator, name (`#index` when unnamed, as import errors say), inputs,
        and whether it has subgraphs: what run_time_refusal reads, without the weights."""
        """Every tensor's shape over the symbols, and the limits the model puts on them."""
        self.bound_reasons: dict[str, str] = {}
        """Why a symbol's upper bound is what it is, where the model sets it."""
        self._apply_model_limits(dict(dims or {}))
        self.options = options
        self.max_loaded = max(1, max_loaded)
        self._loaded: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.compiles = 0
        """Specializations made by this object (compiled or loaded from the cache)."""
        self.one_compile = one_compile
        self._once: Any = None
        self._once_tried = False
        self.one_compile_refused: str | None = None
        """Why the model is compiled per size rather than once (None: not tried, or once)."""

    def _apply_model_limits(self, dims: Mapping[str, DimSpec]) -> None:
        """The model's own upper bounds (a table of learned positions has so many rows) on
        every symbol: an unbounded one takes it; a bound beyond it is a DimError naming why."""
        lows = {s: b.lo for s, b in self.bounds.items()}
        for s, (hi, limit) in self.shapes.upper_bounds(lows).items():
            if s not in self.bounds:
                continue
            bound, reason = self.bounds[s], limit.reason
            if hi < bound.lo or (bound.hi is not None and bound.hi > hi):
                given = f"dims['{s}'] = {dims[s]!r}" if s in dims else f"'{s}' = {bound.lo}"
                raise DimError(
                    f"{given} is beyond what the model allows, '{s}' <= {hi}"
                    f"{_others_at_least(s, limit.expression.symbols, lows)}: {reason}"
                )
            if bound.hi is None or hi < bound.hi:
                self.bounds[s] = Bound(bound.lo, hi)
                self.bound_reasons[s] = reason

    def derived(self, symbol: str) -> bool:
        """Whether the symbol is spelled as arithmetic over the others (`past + seq`)."""
        return _evaluate(symbol, dict.fromkeys(self.symbols, 1)) is not None

    @property
    def input_names(self) -> list[str]:
        return list(self.input_dims)

    def _fixed_by(self, shapes: dict[str, list[int]]) -> dict[str, int]:
        """The symbol sizes that input_shapes pin down."""
        fixed: dict[str, int] = {}
        for name, shape in shapes.items():
            if name not in self.input_dims:
                raise DimError(
                    f"input_shapes names unknown input '{name}' (model inputs: "
                    f"{', '.join(repr(n) for n in self.input_dims)})"
                )
            ds = self.input_dims[name]
            if len(shape) != len(ds):
                raise DimError(
                    f"input_shapes gives rank {len(shape)} for input '{name}' {_spell(ds)}"
                )
            for axis, (d, size) in enumerate(zip(ds, shape, strict=True)):
                if isinstance(d, int):
                    if d != size:
                        raise DimError(
                            f"input_shapes gives '{name}' size {size} on axis {axis}, which is "
                            f"{d} in the model"
                        )
                elif fixed.setdefault(d, int(size)) != size:
                    raise DimError(
                        f"input_shapes give symbol '{d}' two sizes, {fixed[d]} and {size}"
                    )
        return fixed

    def bind(self, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
        """Each symbol's size in these input shapes; InputError for an unknown or missing input,
        a wrong rank or static size, a symbol given two sizes, or a size out of bounds."""
        unknown = [k for k in shapes if k not in self.input_dims]
        if unknown:
            raise InputError(
                f"unknown input name(s) {unknown}; the model's inputs are {self.input_names}"
            )
        sizes: dict[str, int] = {}
        where: dict[str, tuple[str, int]] = {}
        for name, ds in self.input_dims.items():
            if name not in shapes:
                raise InputError(
                    f"missing input '{name}' (shape {_spell(ds)}, {self.input_dtypes[name]})"
                )
            shape = tuple(shapes[name])
            if len(shape) != len(ds) or any(
                isinstance(d, int) and d != size for d, size in zip(ds, shape, strict=False)
            ):
                raise InputError(
                    f"input '{name}' has shape {list(shape)}; the model expects {_spell(ds)}"
                )
            for axis, (d, size) in enumerate(zip(ds, shape, strict=True)):
                if isinstance(d, int):
                    continue
                if d in sizes and sizes[d] != size:
                    first, faxis = where[d]
                    raise InputError(
                        f"symbol '{d}' is {sizes[d]} in input '{first}' (axis {faxis}) but "
                        f"{size} in input '{name}' (axis {axis})"
                    )
                sizes[d], where[d] = int(size), (name, axis)
                bound = self.bounds[d]
                if bound.lo == bound.hi and size != bound.lo:  # input_shapes or dims fixed it
                    fixed = [e if isinstance(e, int) else self.bounds[e].lo for e in ds]
                    raise InputError(
                        f"input '{name}' has shape {list(shape)}; the model expects {fixed} "
                        f"('{d}' = {bound.lo})"
                    )
                if not bound.holds(int(size)):
                    over = bound.hi is not None and size > bound.hi
                    why = self.bound_reasons.get(d) if over else None
                    raise InputError(
                        f"symbol '{d}' is {size} in input '{name}' (axis {axis}), outside the "
                        + (
                            f"bounds {self.bounds[d]} the model allows: {why}"
                            if why
                            else f"bounds {self.bounds[d]} the model was compiled for"
                        )
                    )
        for d, size in sizes.items():
            value = _evaluate(d, sizes)
            if value is not None and value != size:
                name, axis = where[d]
                raise InputError(
                    f"input '{name}' has size {size} on axis {axis}, whose symbol '{d}' is "
                    f"{value} for the sizes of the other inputs"
                )
        for lim in self.shapes.violated(sizes):  # a limit over several symbols (past + seq)
            spelled = ", ".join(f"{s} = {sizes[s]}" for s in sorted(lim.expression.symbols))
            raise InputError(
                f"sizes {spelled} are beyond what the model allows, {lim.expression} <= "
                f"{lim.bound} (it is {lim.expression.evaluate(sizes)}): {lim.reason}"
            )
        return sizes

    def shapes_for(self, sizes: Mapping[str, int]) -> dict[str, list[int]]:
        """Every input's static shape under these symbol sizes (input_shapes for a compile)."""
        return {
            name: [d if isinstance(d, int) else int(sizes[d]) for d in ds]
            for name, ds in self.input_dims.items()
        }

    def _fixed_sizes(self) -> dict[str, int]:
        """The symbols whose bounds leave one size (input_shapes or dims fixed them)."""
        return {s: b.lo for s, b in self.bounds.items() if b.lo == b.hi}

    def fixed_shapes(self) -> dict[str, list[int]]:
        """The shapes of the inputs whose every symbol is fixed (bounds lo == hi): what a
        static compile (`ziggurat compile --dim seq=128`) takes as input_shapes."""
        fixed = self._fixed_sizes()
        return {
            name: [d if isinstance(d, int) else fixed[d] for d in ds]
            for name, ds in self.input_dims.items()
            if all(isinstance(d, int) or d in fixed for d in ds)
        }

    def specialize(self, **sizes: int) -> Any:
        """The compiled model for these symbol sizes (every symbol given, within bounds; one
        spelled as arithmetic over others, `past + seq`, may be left out):
        from memory, the compile cache, or a compile."""
        for s in self.symbols:  # `past + seq` follows from past and seq
            derived = _evaluate(s, sizes) if s not in sizes else None
            if derived is not None:
                sizes[s] = derived
        missing = [s for s in self.symbols if s not in sizes]
        if missing or set(sizes) - set(self.symbols):
            raise InputError(
                f"specialize needs a size for each of the symbols {list(self.symbols)} "
                f"(got {sorted(sizes)})"
            )
        return self._specialization(
            self.bind({n: tuple(s) for n, s in self.shapes_for(sizes).items()})
        )

    def for_feeds(self, feeds: Mapping[str, Any]) -> Any:
        """The specialization for the feeds' sizes (their names, shapes and dtypes are checked
        before any compile)."""
        if not self.symbols:  # static: the compile checks the feeds, as compile_model does
            return self._specialization({}, feeds)
        return self._specialization(self.bind({k: np.shape(v) for k, v in feeds.items()}), feeds)

    def _specialization(self, sizes: dict[str, int], feeds: Mapping[str, Any] | None = None) -> Any:
        key = tuple(sizes[s] for s in self.symbols)
        hit = self._loaded.get(key)
        if hit is not None:
            self._loaded.move_to_end(key)
            return hit
        shapes = self.shapes_for(sizes) if self.symbols else self.input_shapes
        compiled = cached_compile(self.model, shapes, feeds=feeds, **self.options)
        self.compiles += 1
        self._loaded[key] = compiled
        while len(self._loaded) > self.max_loaded:
            _, old = self._loaded.popitem(last=False)
            close = getattr(old, "close", None)
            if close is not None:
                close()
        return compiled

    def once(self) -> Any:
        """The model compiled once for every size of its symbols (their dims `?`, sizes passed
        at run time), or None where it is compiled per size; compiled on first use."""
        if self._once_tried:
            return self._once
        self._once_tried = True
        if not self.symbols or self.one_compile is False:
            return None
        unsupported = self.run_time_refusal()
        if unsupported:
            return self._refuse(unsupported)
        unknown = [
            o for o in self.output_names if any(d is None for d in self.shapes.shape(o) or [None])
        ]
        if unknown:
            return self._refuse(f"the shape of output '{unknown[0]}' is not known over the symbols")
        fixed = self._fixed_sizes()
        shapes = {
            name: [d if isinstance(d, int) else fixed.get(d, RUN_TIME) for d in ds]
            for name, ds in self.input_dims.items()
        }
        try:
            self._once = cached_compile(self.model, shapes, **self.options)
        except ZigguratError as e:
            return self._refuse(str(e))
        self.compiles += 1
        return self._once

    def run_time_refusal(self) -> str | None:
        """The first node that would read a tensor with run-time dims but is not compiled for
        them (run_time_dims.RUN_TIME_DIM_OPS), found on the skeleton before any import."""
        for key, name, inputs, nested in self._nodes:
            if key in RUN_TIME_DIM_OPS and not nested:
                continue
            for i in inputs:
                shape = self.shapes.shape(i) if i else []
                if shape is not None and any(d is None or d.symbols for d in shape):
                    return (
                        f"{key} node '{name}' reads '{i}', whose shape depends on the symbols; "
                        f"{key} is not compiled for run-time sizes yet"
                    )
        return None

    def _refuse(self, why: str) -> None:
        if self.one_compile:
            raise CompileError(f"cannot compile the model once for every size: {why}")
        self.one_compile_refused = why

    def output_shapes(self, compiled: Any, sizes: Mapping[str, int]) -> list[list[int]]:
        """The shapes of a once-compiled model's outputs under these symbol sizes."""
        shapes = []
        for spec in compiled.outputs:
            dims = self.shapes.shape(spec.name) if spec.run_time_dims else None
            if dims is None:
                shapes.append(list(spec.shape))
                continue
            sized = [d.evaluate(sizes) if d is not None else None for d in dims]
            if any(d is None for d in sized):
                raise InputError(f"the shape of output '{spec.name}' is not known at {sizes}")
            shapes.append([int(d) for d in sized if d is not None])
        return shapes

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name: from the model compiled once where it is, else from the
        specialization for the feeds' sizes."""
        if not self.symbols:
            return self.for_feeds(feeds).run(feeds)
        sizes = self.bind({k: np.shape(v) for k, v in feeds.items()})  # before any compile
        once = self.once()
        if once is None:
            return self._specialization(sizes, feeds).run(feeds)
        return once.run(feeds, self.output_shapes(once, sizes))

    def close(self) -> None:
        """Free every loaded specialization now."""
        while self._loaded:
            _, old = self._loaded.popitem()
            close = getattr(old, "close", None)
            if close is not None:
                close()


def compile_symbolic(
    model: str | Path | Any,
    dims: Mapping[str, DimSpec] | None = None,
    input_shapes: Mapping[str, list[int]] | None = None,
    **options: Any,
) -> SymbolicModel:
    """A model runnable at any sizes of its symbolic dims within `dims` ({"seq": (1, 512),
    "batch": 1}; a symbol left out is unbounded): see the module. `options` are
    cached_compile's (target, optimize, schedules, threads, preset, layout, cache)."""
    return SymbolicModel(model, dims, input_shapes, **options)
