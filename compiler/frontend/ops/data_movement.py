"""Converters that move data without arithmetic: reshapes, transposes, slices, gathers,
padding, tiling."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    GRAPH_ELEMENTS,
    SUPPORTED_ELEMENTS,
    TENSOR_TYPES,
    Importer,
    Value,
    attrs,
    converter,
    counted,
    element_type_of,
    results,
    text,
    type_name,
)
from compiler.frontend.run_time_dims import RUN_TIME
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.dense import numpy_dtype


def _reshape(imp: Importer, x: SSAValue, shape: Sequence[int]) -> list[Value]:
    return results(imp.emit(g.ReshapeOp(x, shape)))


@converter("Reshape")
def convert_reshape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    target = imp.int_input(node, 1, "shape")
    try:
        shape = S.reshape_target(imp.shape(node.input[0]), target, attrs(node).get("allowzero", 0))
    except S.ShapeError as e:
        raise imp.error(str(e)) from e
    return _reshape(imp, imp.value(node.input[0]), shape)


@converter("Flatten")
def convert_flatten(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    rank = len(imp.shape(node.input[0]))
    axis = attrs(node).get("axis", 1)
    axis = axis + rank if axis < 0 else axis
    return results(imp.emit(g.FlattenOp(imp.value(node.input[0]), axis=axis)))


@converter("Transpose")
def convert_transpose(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    rank = len(imp.shape(node.input[0]))
    perm = attrs(node).get("perm", list(range(rank))[::-1])
    return results(imp.emit(g.TransposeOp(imp.value(node.input[0]), perm=perm)))


@converter("Concat")
def convert_concat(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    ins = [n for n in node.input if n]
    if not ins:
        raise imp.error("has no inputs (every input name is empty)")
    axis = S.normalize_axis(attrs(node)["axis"], len(imp.shape(ins[0])))
    return results(imp.emit(g.ConcatOp([imp.value(n) for n in ins], axis=axis)))


@converter("Split")
def convert_split(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    shape = imp.shape(node.input[0])
    axis = S.normalize_axis(a.get("axis", 0), len(shape))
    n = len(node.output)
    if imp.opset >= 13 and imp.has(node, 1):
        sizes = imp.int_input(node, 1, "split")
    elif "split" in a:
        sizes = list(a["split"])
    else:
        n = a.get("num_outputs", n)
        if n < 1:
            raise imp.error(f"num_outputs must be positive, got {n}")
        chunk = -(-shape[axis] // n)  # opset 18: the last chunk may be smaller
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(n)]
    if len(sizes) != len(node.output):
        raise imp.error(f"splits into {len(sizes)} parts but has {len(node.output)} outputs")
    return results(imp.emit(g.SplitOp(imp.value(node.input[0]), axis=axis, sizes=sizes)))


@converter("Slice")
def convert_slice(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    rank = len(shape)

    def ints(i: int, what: str) -> list[int] | None:
        if not imp.has(node, i):
            return None
        return imp.int_input(node, i, what)

    a = attrs(node)
    if imp.opset < 10:  # pragma: no cover - below MIN_OPSET, kept for completeness
        for name in ("starts", "ends"):
            if name not in a:
                raise imp.error(f"required attribute '{name}' is missing (opset {imp.opset})")
        st, en, ax, sp = a["starts"], a["ends"], a.get("axes"), None
    else:
        st, en, ax, sp = ints(1, "starts"), ints(2, "ends"), ints(3, "axes"), ints(4, "steps")
    assert st is not None and en is not None  # required inputs (checked against the schema)
    for what, values in (("ends", en), ("axes", ax), ("steps", sp)):
        if values is not None and len(values) != len(st):
            raise imp.error(f"{what} has {counted(len(values), 'value')} but starts has {len(st)}")
    ax = ax if ax is not None else list(range(len(st)))
    sp = sp if sp is not None else [1] * len(st)
    starts, ends, steps = [0] * rank, list(shape), [1] * rank
    for s, e, axis, step in zip(st, en, ax, sp, strict=True):
        d = S.normalize_axis(axis, rank)
        if shape[d] == RUN_TIME:
            if s == 0 and e >= 2**62 and step == 1:
                continue  # the whole run-time dim
            raise imp.error(
                f"slices axis {d}, whose size is known only at run time; such a slice is not "
                "compiled for run-time sizes yet (compile it per size: input_shapes)"
            )
        try:
            starts[d], ends[d] = S.normalize_slice(shape[d], s, e, step)
        except S.ShapeError as err:
            raise imp.error(str(err)) from err
        steps[d] = step
    return results(
        imp.emit(g.SliceOp(imp.value(node.input[0]), starts=starts, ends=ends, steps=steps))
    )


@converter("Squeeze", "Unsqueeze")
def convert_squeeze(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    if imp.opset >= 13:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else None
    else:
        axes = attrs(node).get("axes")
    x = imp.value(node.input[0])
    if node.op_type == "Squeeze":
        if axes is None:
            axes = [i for i, d in enumerate(shape) if d == 1]
        return results(imp.emit(g.SqueezeOp(x, axes=S.normalize_axes(axes, len(shape)))))
    if axes is None:
        raise imp.error("axes are required")
    return results(imp.emit(g.UnsqueezeOp(x, axes=S.normalize_axes(axes, len(shape) + len(axes)))))


@converter("Gather")
def convert_gather(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    axis = S.normalize_axis(attrs(node).get("axis", 0), len(shape))
    idx = imp.const(node.input[1])
    if idx is not None:
        if not np.issubdtype(idx.dtype, np.integer):
            raise imp.error(f"indices ('{node.input[1]}') must be integers, got {idx.dtype}")
        bad = (idx < -shape[axis]) | (idx >= shape[axis])
        if bad.any():
            raise imp.error(f"indices out of range for axis {axis} of extent {shape[axis]}")
        indices = imp.value(node.input[1], dtype=np.int64)
    else:
        indices = imp.value(node.input[1])
        imp.check_indices(
            indices,
            shape[axis],
            f"Gather node '{imp.label}': an index of '{node.input[1]}' into axis {axis} of "
            f"'{node.input[0]}'",
        )
    return results(imp.emit(g.GatherOp(imp.value(node.input[0]), indices, axis=axis)))


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad_indices(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """The input index each output position along one axis reads in reflect, edge or wrap
    padding: negative pads crop first, then the kept range is padded (as onnxruntime does)."""
    kept = np.arange(max(0, -lo), n - max(0, -hi), dtype=np.int64)
    return np.pad(kept, (max(0, lo), max(0, hi)), mode=mode)  # type: ignore[call-overload]


@converter("Pad")
def convert_pad(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """constant: graph.pad (a run-time constant_value fills the border through a static mask);
    reflect, edge, wrap: one gather per padded axis with static indices."""
    a = attrs(node)
    mode = text(a.get("mode", "constant"))
    if mode not in PAD_MODES:
        raise imp.error(f"mode {mode!r} is not supported (one of {', '.join(PAD_MODES)})")
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    if imp.opset < 11:  # pragma: no cover - below MIN_OPSET, kept for completeness
        pads, axes = list(a["pads"]), list(range(rank))
    else:
        pads = imp.int_input(node, 1, "pads")
        axes = list(range(rank))
    if imp.has(node, 3):  # opset 18: pads only for the given axes
        axes = [S.normalize_axis(v, rank) for v in imp.int_input(node, 3, "axes")]
        if len(set(axes)) != len(axes):
            raise imp.error(f"axes {axes} repeat an axis")
    if len(pads) != 2 * len(axes):
        raise imp.error(
            f"pads must have {2 * len(axes)} values (two per axis in {axes}), got {len(pads)}"
        )
    full = [0] * (2 * rank)
    for i, d in enumerate(axes):
        full[d], full[d + rank] = pads[i], pads[i + len(axes)]
    for d in range(rank):
        if shape[d] + full[d] + full[d + rank] < 1:
            raise imp.error(f"pads {pads} leave nothing of axis {d} (extent {shape[d]})")
    if mode != "constant":
        for d in range(rank):
            lo, hi = full[d], full[d + rank]
            if lo == 0 and hi == 0:
                continue
            if shape[d] - max(0, -lo) - max(0, -hi) < 1:
                raise imp.error(f"{mode} padding of axis {d} needs a non-empty (cropped) input")
            idx = pad_indices(shape[d], lo, hi, mode)
            x = imp.op(g.GatherOp(x, imp.op(g.ConstantOp(idx)), axis=d))
        return [x if any(full) else imp.op(g.IdentityOp(x))]
    cv = imp.const(node.input[2]) if imp.has(node, 2) else np.zeros(1)
    if cv is not None:
        value = imp.scalar_input(node, 2, "constant_value") if imp.has(node, 2) else 0.0
        return results(imp.emit(g.PadOp(x, pads=full, value=value)))
    # a value computed at run time: pad with zeros, then choose the value on the border
    v = imp.value(node.input[2])
    if math.prod(imp.shape_of(v)) != 1:
        raise imp.error(f"constant_value must hold one value, got shape {list(imp.shape_of(v))}")
    v = imp.op(g.ReshapeOp(v, []))
    padded = imp.op(g.PadOp(x, pads=full, value=0.0))
    border = np.ones(imp.shape_of(padded), dtype=bool)
    border[
        tuple(slice(max(0, full[d]), border.shape[d] - max(0, full[d + rank])) for d in range(rank))
    ] = False
    return results(imp.emit(g.WhereOp(imp.op(g.ConstantOp(border)), v, padded)))


@converter("DepthToSpace", "SpaceToDepth")
def convert_depth_to_space(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Reshape - transpose - reshape, as the operator's definition spells it."""
    a = attrs(node)
    bs = int(a["blocksize"])
    x = imp.value(node.input[0])
    n, c, h, w = imp.shape_of(x)
    if node.op_type == "DepthToSpace":
        if text(a.get("mode", "DCR")) == "DCR":
            t = imp.op(g.ReshapeOp(x, [n, bs, bs, c // (bs * bs), h, w]))
            t = imp.op(g.TransposeOp(t, perm=[0, 3, 4, 1, 5, 2]))
        else:
            t = imp.op(g.ReshapeOp(x, [n, c // (bs * bs), bs, bs, h, w]))
            t = imp.op(g.TransposeOp(t, perm=[0, 1, 4, 2, 5, 3]))
        return results(imp.emit(g.ReshapeOp(t, [n, c // (bs * bs), h * bs, w * bs])))
    t = imp.op(g.ReshapeOp(x, [n, c, h // bs, bs, w // bs, bs]))
    crd = text(a.get("mode", "DCR")) == "CRD"
    t = imp.op(g.TransposeOp(t, perm=[0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4]))
    return results(imp.emit(g.ReshapeOp(t, [n, c * bs * bs, h // bs, w // bs])))


@converter("Tile")
def convert_tile(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x tiled `repeats` times: interleave unit dims, broadcast them to the repeats, merge."""
    reps = imp.int_input(node, 1, "repeats")
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    if len(reps) != len(shape) or min(reps, default=1) < 1:
        raise imp.error(f"repeats {reps} must be {len(shape)} positive numbers")
    spread = [v for d in shape for v in (1, d)]
    grown = [v for r, d in zip(reps, shape, strict=True) for v in (r, d)]
    t = imp.op(g.ExpandOp(imp.op(g.ReshapeOp(x, spread)), shape=grown))
    return results(imp.emit(g.ReshapeOp(t, [r * d for r, d in zip(reps, shape, strict=True)])))


@converter("Trilu")
def convert_trilu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x where the (static) triangle mask holds, else 0."""
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    k = imp.int_input(node, 1, "k")[0] if imp.has(node, 1) else 0
    rows, cols = np.indices(shape[-2:])
    upper = int(attrs(node).get("upper", 1))
    keep = (cols - rows >= k) if upper else (cols - rows <= k)
    zero = imp.scalar(0, like=x)
    return results(imp.emit(g.WhereOp(imp.op(g.ConstantOp(keep)), x, zero)))


@converter("Size")
def convert_size(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return [np.asarray(math.prod(imp.shape(node.input[0])), dtype=np.int64)]  # static


@converter("CenterCropPad")
def convert_center_crop_pad(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Each listed axis cropped or zero-padded to its target around the centre: one graph.pad
    whose negative pads crop (the odd element goes to the end, as the reference does)."""
    shape = imp.shape(node.input[0])
    rank = len(shape)
    target = imp.int_input(node, 1, "shape")
    axes = [S.normalize_axis(int(d), rank) for d in attrs(node).get("axes", range(rank))]
    if len(set(axes)) != len(axes):
        raise imp.error(f"axes {axes} repeat an axis")
    if len(target) != len(axes):
        raise imp.error(f"shape has {len(target)} values for {len(axes)} axes")
    if min(target, default=1) < 1:
        raise imp.error(f"shape must be positive, got {target}")
    pads = [0] * (2 * rank)
    for d, want in zip(axes, target, strict=True):
        grow = want - shape[d]
        half = abs(grow) // 2
        lo, hi = (half, grow - half) if grow >= 0 else (-half, grow + half)
        pads[d], pads[d + rank] = lo, hi
    return results(imp.emit(g.PadOp(imp.value(node.input[0]), pads=pads, value=0.0)))


@converter("EyeLike")
def convert_eye_like(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Static: a constant of the input's shape (only its shape is read)."""
    shape = imp.shape(node.input[0])
    if len(shape) != 2:
        raise imp.error(f"input must be 2-D, got shape {list(shape)}")
    a = attrs(node)
    if "dtype" in a:
        elem = int(a["dtype"])
        if elem not in GRAPH_ELEMENTS:
            raise imp.error(f"dtype {type_name(elem)} is not supported ({SUPPORTED_ELEMENTS})")
        dtype = np.dtype(TENSOR_TYPES[elem])
    else:
        dtype = numpy_dtype(element_type_of(imp.value(node.input[0])))
    return [np.eye(shape[0], shape[1], k=int(a.get("k", 0)), dtype=dtype)]


@converter("Compress")
def convert_compress(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """The slices (or, without an axis, the flattened elements) where the import-time condition
    holds: one gather with static indices."""
    cond = imp.const_input(node, 1, "condition")
    if cond.ndim != 1:
        raise imp.error(f"condition must be 1-D, got shape {list(cond.shape)}")
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    a = attrs(node)
    if "axis" in a:
        axis = S.normalize_axis(int(a["axis"]), len(shape))
    else:
        x = imp.op(g.ReshapeOp(x, [math.prod(shape)]))
        axis = 0
    extent = imp.shape_of(x)[axis]
    if len(cond) > extent:
        raise imp.error(f"condition has {len(cond)} values for an axis of extent {extent}")
    keep = np.flatnonzero(cond.astype(bool)).astype(np.int64)
    if keep.size == 0:
        raise imp.error("the condition selects nothing (zero-size tensors are not supported)")
    return results(imp.emit(g.GatherOp(x, imp.op(g.ConstantOp(keep)), axis=axis)))
