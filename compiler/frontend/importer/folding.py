"""Constant folding at import time: a node whose inputs are all known is evaluated by onnx's
reference evaluator (or a folder of ours where that one is wrong), its output sizes bounded
first by shape inference. Apart from the graph walk, which decides what to fold."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from compiler.frontend.importer.attributes import attrs
from compiler.frontend.importer.values import ValueTable

MAX_FOLDED_ELEMENTS = 2**28
"""The most elements of a value computed at import time (constant folding): such a value is
held in memory and then written into the IR."""


def fold(imp: ValueTable, node: onnx.NodeProto) -> list[np.ndarray]:
    """Evaluate a node on import-time constants with ONNX's reference implementation."""
    from onnx.reference import ReferenceEvaluator

    feeds: dict[str, np.ndarray] = {}
    for n in node.input:
        if n:
            v = imp.lookup(n)
            assert isinstance(v, np.ndarray), "_convert folds nodes whose inputs are all known"
            feeds[n] = v
    what = "output '{}' (computed at import time)"
    for name, shape in _inferred_shapes(node, feeds, imp.opset).items():
        imp.check_elements(shape, what.format(name), MAX_FOLDED_ELEMENTS)
    try:
        # IEEE results, as onnxruntime computes them at run time: log(0) = -inf in T5's
        # relative-position buckets (a Where then drops it) is the model's arithmetic, not a
        # problem to warn about
        with np.errstate(all="ignore"):
            if node.op_type in _FOLDERS:
                return _FOLDERS[node.op_type](node, [feeds[n] for n in node.input if n])
            ev = ReferenceEvaluator(node, opsets={**imp.opsets, "": imp.opset})
            # own, contiguous copies: a result may be a broadcast view (Expand) that later
            # evaluators would misread
            outs = [np.array(o) for o in ev.run(None, feeds)]
    except Exception as e:  # any evaluator failure is a model problem
        raise imp.error(f"constant folding failed: {e}") from e
    for name, o in zip(node.output, outs, strict=False):
        imp.check_elements(o.shape, what.format(name), MAX_FOLDED_ELEMENTS)
    return outs


def _fold_gather_elements(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    data, idx = args
    axis = int(attrs(node).get("axis", 0)) % data.ndim
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return [np.take_along_axis(data, idx, axis=axis)]


def _fold_squeeze(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    given = attrs(node).get("axes", args[1] if len(args) > 1 else None)
    if given is None:
        return [np.squeeze(x)]
    axes = sorted({int(a) % max(x.ndim, 1) for a in np.asarray(given).reshape(-1)})
    if any(x.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {list(x.shape)}")
    return [np.squeeze(x, axis=tuple(axes))]


def _fold_unsqueeze(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    given = attrs(node).get("axes", args[1] if len(args) > 1 else None)
    if given is None:
        raise ValueError("no axes given")
    rank = x.ndim + len(np.asarray(given).reshape(-1))
    axes = sorted(int(a) % rank for a in np.asarray(given).reshape(-1))
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axes {axes}")
    return [np.expand_dims(x, axis=tuple(axes))]


_FOLDERS: dict[str, Callable[[onnx.NodeProto, list[np.ndarray]], list[np.ndarray]]] = {
    # onnx's reference GatherElements (1.23) fails when the indices' shape differs from the
    # data's (it reshapes one gathered element); numpy's take_along_axis is the same operator
    "GatherElements": _fold_gather_elements,
    # its Squeeze and Unsqueeze of opset 11 (axes as an attribute) run the opset-13 code:
    # Unsqueeze fails and Squeeze drops every unit axis
    "Squeeze": _fold_squeeze,
    "Unsqueeze": _fold_unsqueeze,
}
"""Import-time folders used instead of onnx's reference evaluator where it is wrong."""


def _inferred_shapes(
    node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int
) -> dict[str, list[int]]:
    """The output shapes ONNX shape inference gives a node on constant inputs (those it can
    tell), so that a fold that would allocate too much is refused before it runs."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
        types = {
            n: helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for n, v in feeds.items()
        }
        # the small integer inputs are the shape-like ones (ConstantOfShape's shape, pads, ...)
        data = {
            n: numpy_helper.from_array(v, n)
            for n, v in feeds.items()
            if v.size <= 64 and v.dtype.kind in "iu"
        }
        outs = onnx.shape_inference.infer_node_outputs(
            schema, node, types, data, opset_imports=[helper.make_opsetid("", opset)]
        )
    except Exception:  # no inference for this node: the evaluator reports what is wrong
        return {}
    shapes = {}
    for name, tp in outs.items():
        if tp.HasField("tensor_type") and tp.tensor_type.HasField("shape"):
            dims = tp.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                shapes[name] = [d.dim_value for d in dims]
    return shapes
