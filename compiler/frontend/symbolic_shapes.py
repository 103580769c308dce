"""Shapes over symbols: every tensor's shape in a model with symbolic input dims, as polynomials
of the symbols (`batch*seq`, `past + seq`), and the limits the model itself puts on them.

The import fixes every shape (compiler/symbolic_model.py compiles each binding of the symbols on
its own); this analysis reads the model once with the symbols left free. It evaluates the shape
arithmetic exporters emit (Shape, Gather, Unsqueeze, Concat, Slice, Range, Reshape, Expand, integer
Add/Sub/Mul/Div) on symbolic values and follows shapes through the ops around it (elementwise
with broadcasting, MatMul, Transpose, reductions, normalizations ...). Integer tensors carry the
exact smallest and largest element they hold where they come from a Range through ops that keep
them (Unsqueeze, Reshape, Expand, Cast, adding a constant), so a Gather of rows of a table, a
learned position embedding read at `Range(past, past + seq)`, gives a limit: `past + seq - 1 <=
rows - 1`. SymbolicModel checks the limits before it compiles a size, so a size the model
cannot run at is one error that names the table and the node, not a failure deep inside the
compile, and reports them as the model's bounds (`ziggurat run` and `compile_symbolic`).

What the analysis cannot follow it leaves unknown (None): an op it has no rule for, a value
that depends on the data. Unknown is never a limit: limits come only from what is proven.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

Monomial = tuple[str, ...]
"""Symbol names, sorted, repeated for powers; () is the constant term."""


class Poly:
    """A polynomial of symbols with integer coefficients: a dimension or a shape value."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, int] | None = None) -> None:
        self.terms: dict[Monomial, int] = {m: c for m, c in (terms or {}).items() if c}

    @staticmethod
    def const(value: int) -> Poly:
        return Poly({(): int(value)})

    @staticmethod
    def symbol(name: str) -> Poly:
        return Poly({(name,): 1})

    @property
    def constant(self) -> int | None:
        """The value when no symbol appears, else None."""
        if not self.terms:
            return 0
        if set(self.terms) == {()}:
            return self.terms[()]
        return None

    @property
    def symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}

    def evaluate(self, sizes: Mapping[str, int]) -> int | None:
        """The value with the symbols bound to `sizes` (None: one is not bound)."""
        total = 0
        for m, c in self.terms.items():
            if any(s not in sizes for s in m):
                return None
            total += c * math.prod(sizes[s] for s in m)
        return total

    def __add__(self, other: Poly | int) -> Poly:
        o = _poly(other)
        terms = dict(self.terms)
        for m, c in o.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Poly | int) -> Poly:
        return self + (-_poly(other))

    def __rsub__(self, other: Poly | int) -> Poly:
        return _poly(other) - self

    def __mul__(self, other: Poly | int) -> Poly:
        o = _poly(other)
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    __rmul__ = __mul__

    def exact_div(self, other: Poly | int) -> Poly | None:
        """self / other when other is one term dividing every term of self exactly, else
        None (the quotient is no polynomial, or not one this knows)."""
        o = _poly(other)
        if len(o.terms) != 1:
            return None
        ((dm, dc),) = o.terms.items()
        out: dict[Monomial, int] = {}
        for m, c in self.terms.items():
            rest = list(m)
            for s in dm:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % dc:
                return None
            out[tuple(rest)] = c // dc
        return Poly(out)

    def __floordiv__(self, other: Poly | int) -> Poly:
        q = self.exact_div(other)
        if q is None:
            raise _Unknown
        return q

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            other = Poly.const(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __repr__(self) -> str:
        return f"Poly({self})"

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts: list[str] = []
        for m, c in sorted(self.terms.items(), key=lambda t: (-len(t[0]), t[0])):
            name = "*".join(m)
            text = (str(abs(c)) if not name or abs(c) != 1 else "") + (
                ("*" if name and abs(c) != 1 else "") + name
            )
            parts.append(("- " if c < 0 else "+ ") + text)
        joined = " ".join(parts)
        return joined[2:] if joined.startswith("+ ") else "-" + joined[2:]


def _poly(value: Poly | int | np.integer) -> Poly:
    if isinstance(value, Poly):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Poly.const(int(value))
    raise _Unknown


class _Unknown(Exception):
    """A rule met something it cannot follow: the outputs are unknown."""


Dim = Poly | None
Shape = list[Dim]


@dataclass
class Value:
    """What the analysis knows of one tensor."""

    shape: Shape | None = None
    """Its dims (None: not even its rank is known)."""
    elements: np.ndarray | None = None
    """Its integer elements as an object array of Poly (shape arithmetic), where known."""
    low: Poly | None = None
    high: Poly | None = None
    """The smallest and largest element it holds, exactly (a Range's, for instance)."""
    floats: np.ndarray | None = None
    """The elements of a small floating-point constant (a Resize's scales)."""
    from_input: str | None = None
    """The graph input whose elements these are, unchanged (through a Cast to an integer type,
    Unsqueeze, Reshape ...): a gather reading at them limits the values the input may hold."""


@dataclass(frozen=True)
class Limit:
    """The model needs `expression <= bound` of its symbols; `reason` says why."""

    expression: Poly
    bound: int
    reason: str

    def holds(self, sizes: Mapping[str, int]) -> bool | None:
        value = self.expression.evaluate(sizes)
        return None if value is None else value <= self.bound


@dataclass(frozen=True)
class InputLimit:
    """The values of graph input `name` must lie in [-extent, extent): a gather reads at them
    (`reason`); position ids into a table of learned positions, say."""

    name: str
    extent: int
    reason: str


@dataclass
class SymbolicShapes:
    """The analysis of one graph: each tensor's Value and the limits found."""

    values: dict[str, Value] = field(default_factory=dict)
    limits: list[Limit] = field(default_factory=list)
    input_limits: list[InputLimit] = field(default_factory=list)

    def shape(self, name: str) -> Shape | None:
        v = self.values.get(name)
        return None if v is None else v.shape

    def violated(self, sizes: Mapping[str, int]) -> list[Limit]:
        """The limits these symbol sizes break."""
        return [lim for lim in self.limits if lim.holds(sizes) is False]

    def upper_bounds(self, lows: Mapping[str, int]) -> dict[str, tuple[int, Limit]]:
        """Each symbol's largest size the limits allow with every other symbol at its least
        size (`lows`; 0 where not given), and the limit that sets it: from limits linear in it
        with non-negative coefficients only."""
        out: dict[str, tuple[int, Limit]] = {}
        for lim in self.limits:
            terms = lim.expression.terms
            if any(len(m) > 1 or c < 0 for m, c in terms.items() if m):
                continue
            for (s,) in [m for m in terms if m]:
                rest = sum(
                    c * (lows.get(m[0], 0) if m else 1) for m, c in terms.items() if m != (s,)
                )
                hi = (lim.bound - rest) // terms[(s,)]
                if s not in out or hi < out[s][0]:
                    out[s] = (hi, lim)
        return out


def input_dim_names(
    inputs: Iterable[onnx.ValueInfoProto], inits: set[str]
) -> dict[str, list[int | str] | None]:
    """Each graph input that is a tensor and not an initializer -> its dims: sizes, or symbol
    names (a `dim_param`; an unknown dim without one is called `INPUT.AXIS`); None where the
    input declares no shape."""
    raw: dict[str, list[int | str] | None] = {}
    for inp in inputs:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        tt = inp.type.tensor_type
        raw[inp.name] = (
            [
                d.dim_value
                if d.HasField("dim_value") and d.dim_value >= 0
                else d.dim_param or f"{inp.name}.{axis}"
                for axis, d in enumerate(tt.shape.dim)
            ]
            if tt.HasField("shape")
            else None
        )
    return raw


def symbol_dims(inputs: Iterable[onnx.ValueInfoProto], inits: set[str]) -> dict[str, Shape]:
    """Each graph input's dims (input_dim_names) as polynomials: a symbol, or arithmetic over
    symbols that other dims name alone (`past + seq`)."""
    raw = {k: ds for k, ds in input_dim_names(inputs, inits).items() if ds is not None}
    plain = {d for ds in raw.values() for d in ds if isinstance(d, str) and d.isidentifier()}
    return {
        name: [Poly.const(d) if isinstance(d, int) else parse_dim(d, plain) for d in ds]
        for name, ds in raw.items()
    }


def parse_dim(text: str, plain: set[str]) -> Poly:
    """`text` as arithmetic over the plain symbols where it is such, else a symbol itself."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return Poly.symbol(text)

    def value(node: ast.expr) -> Poly:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Poly.const(node.value)
        if isinstance(node, ast.Name) and (node.id in plain or node.id == text):
            return Poly.symbol(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            return left - right if isinstance(node.op, ast.Sub) else left * right
        raise _Unknown

    try:
        return value(tree)
    except _Unknown:
        return Poly.symbol(text)


def analyze(graph: onnx.GraphProto) -> SymbolicShapes:
    """Every tensor's symbolic shape in `graph` (a model's, or compiler/frontend/onnx_signature's
    skeleton, whose large initializers carry no values) and the limits it puts on the symbols."""
    inits = {t.name for t in graph.initializer}
    result = SymbolicShapes()
    values = result.values
    for name, dims in symbol_dims(graph.input, inits).items():
        values[name] = Value(shape=dims, from_input=name)
    for t in graph.initializer:
        values[t.name] = _initializer(t)
    for i, node in enumerate(graph.node):
        label = f"{node.op_type} node '{node.name or f'#{i}'}'"
        ins = [values.get(n, Value()) if n else None for n in node.input]
        try:
            outs = _RULES[node.op_type](node, ins, result, label) if node.op_type in _RULES else []
        except (_Unknown, IndexError, KeyError, ValueError, TypeError, ZeroDivisionError):
            outs = []
        for k, name in enumerate(node.output):
            if name:
                values[name] = outs[k] if k < len(outs) else Value()
    return result


def _initializer(t: onnx.TensorProto) -> Value:
    shape: Shape = [Poly.const(d) for d in t.dims]
    small_int = t.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
    small_float = t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
    # values in a file beside the model are never read here (nor trusted: the import checks them)
    external = t.data_location == onnx.TensorProto.EXTERNAL
    if not (small_int or small_float) or external or math.prod(t.dims) > 64:
        return Value(shape=shape)
    if small_float:
        try:
            floats = numpy_helper.to_array(t).astype(np.float64)
        except (ValueError, TypeError):
            return Value(shape=shape)
        return Value(shape=shape, floats=floats if floats.size == math.prod(t.dims) else None)
    try:
        array = numpy_helper.to_array(t)
    except (ValueError, TypeError):  # a skeleton's large tensor: no values
        return Value(shape=shape)
    if array.size != math.prod(t.dims):
        return Value(shape=shape)
    return _known(array)


def _known(array: np.ndarray) -> Value:
    """The Value of integer elements known at analysis time (each a Poly, possibly constant)."""
    elements: np.ndarray = np.empty(array.shape, dtype=object)
    flat = elements.reshape(-1)
    for k, x in enumerate(np.asarray(array).reshape(-1)):
        flat[k] = x if isinstance(x, Poly) else Poly.const(int(x))
    return Value(shape=[Poly.const(d) for d in elements.shape], elements=elements)


def _ints(v: Value | None) -> list[int]:
    """A known tensor of constant integers, flattened (an axes input, a Reshape's zeros)."""
    if v is None or v.elements is None:
        raise _Unknown
    out = []
    for p in v.elements.reshape(-1):
        c = p.constant
        if c is None:
            raise _Unknown
        out.append(c)
    return out


def _dims(v: Value | None) -> Shape:
    if v is None or v.shape is None:
        raise _Unknown
    return v.shape


def _attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _broadcast(*shapes: Shape) -> Shape:
    """Numpy broadcasting of symbolic shapes: a 1 takes the other's dim; two dims that differ
    and are not 1 are taken to be equal (the model says so), the first known one kept."""
    rank = max(len(s) for s in shapes)
    out: Shape = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        chosen: Dim = Poly.const(1)
        for d in dims:
            if d is None:
                chosen = None if chosen == Poly.const(1) else chosen
            elif d != Poly.const(1):
                chosen = d if chosen is None or chosen == Poly.const(1) else chosen
        out.append(chosen)
    return out


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise _Unknown
    return axis % rank


def _axes_of(node: onnx.NodeProto, ins: list[Value | None], position: int) -> list[int] | None:
    """The axes of a node (attribute before opset 13, input `position` since)."""
    attr = _attr(node, "axes")
    if attr is not None:
        return list(attr)
    if len(ins) > position and ins[position] is not None:
        return _ints(ins[position])
    return None


# rules: (node, inputs, analysis, label) -> output Values


def _same(node, ins, _r, _label):
    v = ins[0]
    return [
        Value(shape=_dims(v), elements=v.elements, low=v.low, high=v.high, from_input=v.from_input)
    ]


def _same_shape(node, ins, _r, _label):
    return [Value(shape=_dims(ins[0]))]  # the first output (a norm's statistics: unknown)


def _elementwise(node, ins, _r, _label):
    shapes = [_dims(v) for v in ins if v is not None]
    out = Value(shape=_broadcast(*shapes))
    op = node.op_type
    known = [v.elements for v in ins if v is not None]
    if all(e is not None for e in known) and op in _ARITH:
        elements = np.vectorize(_ARITH[op], otypes=[object])(*known)
        return [_known(np.asarray(elements, dtype=object))]
    if op in ("Add", "Sub") and len(ins) == 2 and ins[1] is not None and ins[0] is not None:
        shift = ins[1].elements
        if shift is not None and shift.size == 1 and ins[0].low is not None:
            s = shift.reshape(-1)[0]
            sign = 1 if op == "Add" else -1
            out.low = ins[0].low + s * sign
            out.high = ins[0].high + s * sign if ins[0].high is not None else None
    return [out]


def _div(a: Poly, b: Poly) -> Poly:
    ca, cb = a.constant, b.constant
    if ca is not None and cb is not None and cb != 0:
        return Poly.const(int(ca / cb))  # ONNX integer Div truncates
    return a // b


def _cmp(op: str):
    def f(a: Poly, b: Poly) -> Poly:
        ca, cb = a.constant, b.constant
        if ca is None or cb is None:
            raise _Unknown
        return Poly.const(int({"Equal": ca == cb, "Less": ca < cb, "Greater": ca > cb}[op]))

    return f


def _minmax(pick):
    def f(*xs: Poly) -> Poly:
        cs = [x.constant for x in xs]
        if any(c is None for c in cs):
            raise _Unknown
        return Poly.const(pick(cs))

    return f


_ARITH = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": _div,
    "Equal": _cmp("Equal"),
    "Less": _cmp("Less"),
    "Greater": _cmp("Greater"),
    "Mod": lambda a, b: Poly.const(_const(a) % _const(b)),  # an integer Mod (fmod=0): Python's sign
    "Max": _minmax(max),
    "Min": _minmax(min),
}


def _shape(node, ins, _r, _label):
    dims = _dims(ins[0])
    start, end = _attr(node, "start", 0), _attr(node, "end", len(dims))
    part = dims[slice(start, end)]
    if any(d is None for d in part):
        return [Value(shape=[Poly.const(len(part))])]
    return [_known(np.array(part + [], dtype=object).reshape(len(part)))]


def _constant(node, _ins, _r, _label):
    t = _attr(node, "value")
    if isinstance(t, onnx.TensorProto):
        return [_initializer(t)]
    raise _Unknown


def _constant_of_shape(node, ins, _r, _label):
    dims = _known_elements(ins[0])
    fill = _attr(node, "value")
    sizes = [c for d in dims if (c := d.constant) is not None]
    if (
        isinstance(fill, onnx.TensorProto)
        and fill.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
        and len(sizes) == len(dims)
        and math.prod(sizes) <= 64
    ):
        value = int(numpy_helper.to_array(fill).reshape(-1)[0])
        return [_known(np.full(sizes, value, dtype=np.int64))]
    return [Value(shape=list[Dim](dims))]


def _gather(node, ins, result: SymbolicShapes, label):
    data, idx = ins[0], ins[1]
    dims, idims = _dims(data), _dims(idx)
    axis = _axis(_attr(node, "axis", 0), len(dims))
    rows = dims[axis]
    if rows is not None and rows.constant is not None and idx is not None:
        n = rows.constant
        name = node.input[0]
        if idx.high is not None and idx.high.constant is None:
            result.limits.append(
                Limit(
                    idx.high,
                    n - 1,
                    f"{label} reads index {idx.high} of '{name}', whose axis {axis} has {n}",
                )  # fmt: skip
            )
        if idx.low is not None and idx.low.constant is None:
            result.limits.append(
                Limit(
                    -idx.low,
                    n,
                    f"{label} reads index {idx.low} of '{name}', whose axis {axis} has {n}",
                )  # fmt: skip
            )
        if idx.from_input is not None:
            result.input_limits.append(
                InputLimit(
                    idx.from_input,
                    n,
                    f"{label} reads '{name}' at them along axis {axis}, which has {n}",
                )
            )
    out = Value(shape=dims[:axis] + idims + dims[axis + 1 :])
    if data.elements is not None and idx.elements is not None:
        picked = np.take(data.elements, np.asarray(_ints(idx)).reshape(idx.elements.shape), axis)
        return [_known(np.asarray(picked, dtype=object))]
    return [out]


def _unsqueeze(node, ins, _r, _label):
    dims = list(_dims(ins[0]))
    axes = _axes_of(node, ins, 1)
    if axes is None:
        raise _Unknown
    rank = len(dims) + len(axes)
    for a in sorted(_axis(a, rank) for a in axes):
        dims.insert(a, Poly.const(1))
    return [_reshaped(ins[0], dims)]


def _squeeze(node, ins, _r, _label):
    dims = _dims(ins[0])
    axes = _axes_of(node, ins, 1)
    if axes is None:
        axes = [k for k, d in enumerate(dims) if d == Poly.const(1)]
    drop = {_axis(a, len(dims)) for a in axes}
    return [_reshaped(ins[0], [d for k, d in enumerate(dims) if k not in drop])]


def _reshaped(v: Value, dims: Shape) -> Value:
    """v's elements in new dims (same count): values and exact bounds carry over."""
    elements = None
    sizes = [c for d in dims if d is not None and (c := d.constant) is not None]
    if v.elements is not None and len(sizes) == len(dims):
        elements = v.elements.reshape(sizes)
    return Value(shape=dims, elements=elements, low=v.low, high=v.high, from_input=v.from_input)


def _product(dims: Shape) -> Poly:
    """The product of dims, all known (_Unknown otherwise)."""
    out = Poly.const(1)
    for d in dims:
        if d is None:
            raise _Unknown
        out = out * d
    return out


def _sum(dims: Shape) -> Dim:
    """The sum of dims (None if one is unknown)."""
    out = Poly()
    for d in dims:
        if d is None:
            return None
        out = out + d
    return out


def _reshape(node, ins, _r, _label):
    dims = _dims(ins[0])
    target = ins[1]
    if target is None or target.elements is None:
        raise _Unknown
    wanted = list(target.elements.reshape(-1))
    allowzero = _attr(node, "allowzero", 0)
    out: Shape = []
    for k, w in enumerate(wanted):
        c = w.constant
        out.append(dims[k] if c == 0 and not allowzero else (None if c == -1 else w))
    if wanted.count(Poly.const(-1)) == 1:
        free = wanted.index(Poly.const(-1))
        out[free] = _product(dims).exact_div(_product(out[:free] + out[free + 1 :]))
    return [_reshaped(ins[0], out)]


def _concat(node, ins, _r, _label):
    parts = [v for v in ins if v is not None]
    shapes = [_dims(v) for v in parts]
    axis = _axis(_attr(node, "axis", 0), len(shapes[0]))
    out = list(shapes[0])
    along = [s[axis] for s in shapes]
    out[axis] = _sum(along)
    if all(v.elements is not None for v in parts):
        return [_known(np.concatenate([v.elements for v in parts], axis=axis))]
    return [Value(shape=out)]


def _slice(node, ins, _r, _label):
    data = ins[0]
    dims = list(_dims(data))
    starts, ends = ins[1], ins[2]
    if starts is None or ends is None or starts.elements is None or ends.elements is None:
        raise _Unknown
    axes = (
        _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts.elements)))
    )
    steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(axes)
    s_list, e_list = list(starts.elements.reshape(-1)), list(ends.elements.reshape(-1))
    if data.elements is not None:
        index = [slice(None)] * len(dims)
        for a, s, e, st in zip(axes, s_list, e_list, steps, strict=True):
            cs, ce = s.constant, e.constant
            if cs is None or ce is None:
                raise _Unknown
            index[_axis(a, len(dims))] = slice(cs, ce, st)
        return [_known(data.elements[tuple(index)])]
    big = 2**62
    for a, s, e, st in zip(axes, s_list, e_list, steps, strict=True):
        k = _axis(a, len(dims))
        d, cs, ce = dims[k], s.constant, e.constant
        if st != 1 or d is None:
            dims[k] = None
            continue
        dc = d.constant
        if dc is not None and cs is not None and ce is not None:
            dims[k] = Poly.const(len(range(dc)[slice(cs, ce)]))
        elif cs is not None and 0 <= cs and ce is not None and ce >= big:
            dims[k] = d - cs  # [s:]: the dim is at least s where the model runs
        else:
            dims[k] = None
    return [Value(shape=dims)]


def _range(node, ins, _r, _label):
    start, limit, delta = (_scalar(v) for v in ins[:3])
    if delta.constant != 1:
        raise _Unknown
    return [Value(shape=[limit - start], low=start, high=limit - 1)]


def _scalar(v: Value | None) -> Poly:
    if v is None or v.elements is None or v.elements.size != 1:
        raise _Unknown
    return v.elements.reshape(-1)[0]


def _expand(node, ins, _r, _label):
    target = ins[1]
    if target is None or target.elements is None:
        raise _Unknown
    dims = _broadcast(_dims(ins[0]), list(target.elements.reshape(-1)))
    return [Value(shape=dims, low=ins[0].low, high=ins[0].high, from_input=ins[0].from_input)]


def _cast(node, ins, _r, _label):
    v = ins[0]
    to = _attr(node, "to")
    integral = to in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
    if integral:
        return [
            Value(
                shape=_dims(v),
                elements=v.elements,
                low=v.low,
                high=v.high,
                from_input=v.from_input,
            )
        ]
    return [Value(shape=_dims(v), low=v.low, high=v.high)]


def _transpose(node, ins, _r, _label):
    dims = _dims(ins[0])
    perm = _attr(node, "perm") or list(reversed(range(len(dims))))
    return [Value(shape=[dims[p] for p in perm])]


def _matmul(node, ins, _r, _label):
    a, b = list(_dims(ins[0])), list(_dims(ins[1]))
    a1, b1 = len(a) == 1, len(b) == 1
    if a1:
        a = [Poly.const(1), *a]
    if b1:
        b = [*b, Poly.const(1)]
    out = _broadcast(a[:-2], b[:-2]) + [a[-2], b[-1]]
    if b1:
        out.pop(-1)
    if a1:
        out.pop(-2 if not b1 else -1)
    return [Value(shape=out)]


def _gemm(node, ins, _r, _label):
    a, b = _dims(ins[0]), _dims(ins[1])
    m = a[1] if _attr(node, "transA", 0) else a[0]
    n = b[0] if _attr(node, "transB", 0) else b[1]
    return [Value(shape=[m, n])]


def _reduce(node, ins, _r, _label):
    dims = _dims(ins[0])
    axes = _axes_of(node, ins, 1)
    if axes is None:
        if _attr(node, "noop_with_empty_axes", 0):
            return [Value(shape=dims)]
        axes = list(range(len(dims)))
    keep = _attr(node, "keepdims", 1)
    drop = {_axis(a, len(dims)) for a in axes}
    out = [Poly.const(1) if k in drop else d for k, d in enumerate(dims) if keep or k not in drop]
    return [Value(shape=out)]


def _argmax(node, ins, _r, _label):
    dims = _dims(ins[0])
    k = _axis(_attr(node, "axis", 0), len(dims))
    keep = _attr(node, "keepdims", 1)
    return [
        Value(shape=[Poly.const(1) if j == k else d for j, d in enumerate(dims) if keep or j != k])
    ]


def _split(node, ins, _r, _label):
    dims = _dims(ins[0])
    axis = _axis(_attr(node, "axis", 0), len(dims))
    sizes = _attr(node, "split")
    if sizes is None and len(ins) > 1 and ins[1] is not None:
        sizes = _ints(ins[1])
    if sizes is None:
        d = dims[axis]
        n = len(node.output)
        if d is None or n == 0:
            raise _Unknown
        part = d.exact_div(n)
        sizes = [part] * n
    outs = []
    for s in sizes:
        out = list(dims)
        out[axis] = _poly(s) if not isinstance(s, Poly) else s
        outs.append(Value(shape=out))
    return outs


def _where(node, ins, _r, _label):
    shape = _broadcast(*(_dims(v) for v in ins))
    if all(v is not None and v.elements is not None for v in ins):
        cond = np.asarray(_ints(ins[0])).reshape(ins[0].elements.shape).astype(bool)
        return [_known(np.asarray(np.where(cond, ins[1].elements, ins[2].elements), object))]
    return [Value(shape=shape)]


def _resize(node, ins, _r, _label):
    dims = _dims(ins[0])
    if len(ins) > 3 and ins[3] is not None:  # sizes
        return [Value(shape=list(_known_elements(ins[3])))]
    scales = ins[2] if len(ins) > 2 else None
    if scales is None or scales.floats is None or scales.floats.size != len(dims):
        raise _Unknown
    return [
        Value(
            shape=[
                Poly.const(math.floor(_const(d) * float(f)))
                for d, f in zip(dims, scales.floats, strict=True)
            ]
        )
    ]


def _neg(node, ins, _r, _label):
    v = ins[0]
    if v.elements is not None:
        return [_known(np.asarray(-v.elements, dtype=object))]
    return [Value(shape=_dims(v))]


def _known_elements(v: Value) -> list[Poly]:
    if v.elements is None:
        raise _Unknown
    return list(v.elements.reshape(-1))


def _spatial(
    d: Dim, kernel: int, stride: int, pad: int, dilation: int, ceil: bool, begin: int = 0
) -> Dim:
    """One output extent of a window op: (d + pad - dilation*(kernel-1) - 1) / stride + 1
    (`pad` both sides' padding, `begin` the leading side's; with ceil_mode, a last window that
    would start in the trailing padding is dropped)."""
    if d is None:
        return None
    span = d + pad - (dilation * (kernel - 1) + 1)
    if stride == 1:
        return span + 1
    c = span.constant
    if c is None:
        q = span.exact_div(stride)  # a symbolic extent: only an exact division is known
        return None if q is None else q + 1
    out = (-(-c // stride) if ceil else c // stride) + 1
    if ceil and (out - 1) * stride >= _const(d) + begin:
        out -= 1
    return Poly.const(out)


def _window(node, ins, _r, _label):
    """Conv and the pools: NC + spatial dims from kernel, strides, pads, dilations."""
    dims = _dims(ins[0])
    n_sp = len(dims) - 2
    if node.op_type == "Conv":
        w = _dims(ins[1])
        kernel = _attr(node, "kernel_shape") or [_const(d) for d in w[2:]]
        channels = w[0]
    else:
        kernel = _attr(node, "kernel_shape")
        channels = dims[1]
    strides = _attr(node, "strides") or [1] * n_sp
    dilations = _attr(node, "dilations") or [1] * n_sp
    auto_pad = _attr(node, "auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    pads = _attr(node, "pads") or [0] * (2 * n_sp)
    ceil = bool(_attr(node, "ceil_mode", 0))
    out: Shape = [dims[0], channels]
    for k in range(n_sp):
        d = dims[2 + k]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            c = None if d is None else d.constant
            out.append(None if c is None else Poly.const(-(-c // strides[k])))
        elif auto_pad == "VALID":
            out.append(_spatial(d, kernel[k], strides[k], 0, dilations[k], ceil))
        else:
            pad = pads[k] + pads[k + n_sp]
            out.append(_spatial(d, kernel[k], strides[k], pad, dilations[k], ceil, pads[k]))
    return [Value(shape=out)]


def _const(d: Dim) -> int:
    c = None if d is None else d.constant
    if c is None:
        raise _Unknown
    return c


def _global_pool(node, ins, _r, _label):
    dims = _dims(ins[0])
    return [Value(shape=dims[:2] + [Poly.const(1)] * (len(dims) - 2))]


def _flatten(node, ins, _r, _label):
    dims = _dims(ins[0])
    axis = _attr(node, "axis", 1)
    axis = axis % len(dims) if axis < 0 else axis
    head = _product(dims[:axis]) if all(d is not None for d in dims[:axis]) else None
    tail = _product(dims[axis:]) if all(d is not None for d in dims[axis:]) else None
    return [Value(shape=[head, tail])]


def _gather_elements(node, ins, _r, _label):
    return [Value(shape=_dims(ins[1]))]


def _gather_nd(node, ins, _r, _label):
    data, idx = _dims(ins[0]), _dims(ins[1])
    b = _attr(node, "batch_dims", 0)
    depth = _const(idx[-1])
    return [Value(shape=idx[:-1] + data[b + depth :])]


def _pad(node, ins, _r, _label):
    dims = _dims(ins[0])
    pads = _attr(node, "pads")
    if pads is None:
        pads = _ints(ins[1])
    axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(dims)))
    out = list(dims)
    for k, a in enumerate(axes):
        j = _axis(a, len(dims))
        d = out[j]
        out[j] = None if d is None else d + pads[k] + pads[k + len(axes)]
    return [Value(shape=out)]


def _tile(node, ins, _r, _label):
    dims = _dims(ins[0])
    reps = _ints(ins[1])
    return [Value(shape=[None if d is None else d * r for d, r in zip(dims, reps, strict=True)])]


def _first_input_shape_kept(node, ins, _r, _label):
    """Ops whose first output has the first input's shape (a norm with extra inputs)."""
    return [Value(shape=_dims(ins[0]))]


_RULES: dict[str, Any] = {
    "Shape": _shape,
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Reshape": _reshape,
    "Concat": _concat,
    "Slice": _slice,
    "Range": _range,
    "Expand": _expand,
    "Cast": _cast,
    "Identity": _same,
    "Transpose": _transpose,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "ArgMax": _argmax,
    "ArgMin": _argmax,
    "Split": _split,
    "Where": _where,
    "Conv": _window,
    "MaxPool": _window,
    "AveragePool": _window,
    "LpPool": _window,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "GlobalLpPool": _global_pool,
    "Flatten": _flatten,
    "GatherElements": _gather_elements,
    "GatherND": _gather_nd,
    "Pad": _pad,
    "Tile": _tile,
    "Resize": _resize,
    "Neg": _neg,
}
for _op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "LessOrEqual", "Greater",
            "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min", "Mod", "Sum", "PRelu",
            "BitShift", "BitwiseAnd", "BitwiseOr"):  # fmt: skip
    _RULES[_op] = _elementwise
for _op in ("Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Abs",
            "Not", "Sin", "Cos", "Softmax", "LogSoftmax", "LayerNormalization", "Gelu",
            "Dropout", "Trilu", "IsNaN", "IsInf", "Floor", "Ceil", "Round", "Sign", "Clip",
            "LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Mish",
            "SimplifiedLayerNormalization", "CumSum", "BatchNormalization",
            "InstanceNormalization", "LRN", "GroupNormalization", "RMSNormalization",
            "Shrink", "ThresholdedRelu", "Celu", "Softsign", "Hardmax", "Acos", "Asin", "Atan",
            "Cosh", "Sinh", "Tan", "Acosh", "Asinh", "Atanh", "MeanVarianceNormalization",
            "LpNormalization", "ScatterElements", "ScatterND", "Scatter", "BitwiseNot",
            "Swish", "QuickGelu", "FastGelu", "BiasGelu", "SkipLayerNormalization"):  # fmt: skip
    _RULES[_op] = _same_shape
for _op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
            "ReduceL1", "ReduceSumSquare", "ReduceLogSumExp"):  # fmt: skip
    _RULES[_op] = _reduce
