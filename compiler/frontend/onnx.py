"""ONNX -> `graph` dialect: loading a model safely (external data stays inside the model's
folder), upgrading old opsets, and importing it with the converters of compiler/frontend/ops/.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import version_converter
from xdsl.dialects.builtin import ModuleOp

import compiler.frontend.ops  # noqa: F401  (registers the converters)
from compiler.frontend.errors import FrontendError
from compiler.frontend.importer import (
    CONVERTERS,
    MAX_ELEMENTS,
    MAX_FOLDED_ELEMENTS,
    MIN_OPSET,
    TENSOR_TYPES,
    UPGRADE_TO_OPSET,
    Importer,
    check_elements,
    check_opsets,
    type_name,
)
from compiler.frontend.onnx_graph import subgraphs
from compiler.frontend.scan8 import check_scan8, restore_batch_axes

__all__ = [
    "CONVERTERS",
    "MAX_ELEMENTS",
    "MAX_FOLDED_ELEMENTS",
    "FrontendError",
    "Importer",
    "import_onnx",
    "load_model",
]


def load_model(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        proto = model
        where = "model"
    else:
        path = Path(model)
        where = str(path)
        if not path.is_file():
            raise FrontendError(f"model file not found: {path}")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except Exception as e:  # protobuf raises assorted errors
            raise FrontendError(f"{path} is not a valid ONNX model: {e}") from e
        _load_external_data(proto, path)
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise FrontendError(f"{where} is not a valid ONNX model: no graph or IR version")
    check_opsets(proto, where)
    return proto


def _tensors(proto: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every TensorProto of a model: initializers and tensor attributes, in subgraphs too."""
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield from (sparse.values, sparse.indices)
        for node in graph.node:
            for a in node.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)


def _check_external_size(
    t: onnx.TensorProto, keys: dict[str, str], file_size: int, where: str
) -> None:
    """The bytes an external tensor would read must be what its dims need, checked before
    reading: a model must not make the frontend read a huge file into memory."""
    if t.data_type not in TENSOR_TYPES:
        raise FrontendError(
            f"{where} has element type {type_name(t.data_type)}, which is not supported"
        )
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FrontendError(f"{where} has a negative dimension: dims {dims}")
    check_elements(dims, where)
    try:
        offset = int(keys.get("offset") or 0)
        size = int(keys["length"]) if keys.get("length") else file_size - offset
    except ValueError:
        raise FrontendError(
            f"{where}: external data offset/length are not integers: "
            f"{keys.get('offset')!r}, {keys.get('length')!r}"
        ) from None
    need = math.prod(dims) * np.dtype(TENSOR_TYPES[t.data_type]).itemsize
    if size != need:
        raise FrontendError(
            f"{where}: its external data holds {size} bytes, but dims {dims} of "
            f"{type_name(t.data_type)} need {need}"
        )


def _load_external_data(proto: onnx.ModelProto, path: Path) -> None:
    """Read the tensors kept in external files next to the model at `path`.

    Each file must be a regular file inside the model's folder, reached without following a
    symbolic link and with no other hard link: a model must not be able to read (and then
    leak into its results) a file from elsewhere. onnx >= 1.21 refuses these too; this is
    the same rule, checked here in one place whatever onnx version is installed.
    """
    from onnx.external_data_helper import load_external_data_for_tensor

    root = path.parent.resolve()
    for t in _tensors(proto):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        where = f"{path}: tensor '{t.name}'"
        keys = {e.key: e.value for e in t.external_data}
        location = keys.get("location", "")
        parts = Path(location).parts
        if not parts or Path(location).is_absolute() or ".." in parts:
            raise FrontendError(
                f"{where} has external data location {location!r}; it must be "
                "a relative path inside the model's folder"
            )
        current = root
        for part in parts:
            current = current / part
            try:
                info = os.lstat(current)
            except OSError as e:
                raise FrontendError(
                    f"{where}: external data file {location!r} cannot be read: {e.strerror or e}"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                raise FrontendError(
                    f"{where}: external data path {location!r} goes through a symbolic link "
                    f"('{current.relative_to(root)}'); refusing to follow it"
                )
        if not stat.S_ISREG(info.st_mode):
            raise FrontendError(f"{where}: external data {location!r} is not a regular file")
        if info.st_nlink > 1:
            raise FrontendError(
                f"{where}: external data file {location!r} has other hard "
                "links; refusing it (it may be a file from elsewhere)"
            )
        _check_external_size(t, keys, info.st_size, where)
        try:
            load_external_data_for_tensor(t, str(root))
        except Exception as e:  # onnx's own checks (bounds, links) and I/O errors
            raise FrontendError(f"{where}: cannot load its external data: {e}") from None
        t.data_location = onnx.TensorProto.DEFAULT  # (onnx < 1.21 leaves these to the caller)
        del t.external_data[:]


def import_onnx(
    model: str | Path | onnx.ModelProto, input_shapes: dict[str, list[int]] | None = None
) -> ModuleOp:
    """Import an ONNX model (path or ModelProto) as `func.func @main` in the graph dialect.

    `input_shapes` binds symbolic/unknown input dims (input name -> full shape).
    Raises FrontendError for anything the frontend cannot import.
    """
    return Importer(upgrade_opset(load_model(model)), input_shapes).run()


def _check_required_attributes(graph: onnx.GraphProto, opset: int) -> None:
    """Each default-domain node of `graph` (and its subgraphs) has the attributes its operator
    requires at `opset` (Slice's starts and ends before opset 10): the version converter would
    fail on a missing one with an assertion that names neither the node nor the operator."""
    for i, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, "")
        except onnx.defs.SchemaError:
            continue  # no such operator at this opset: the converter says so
        given = {a.name for a in node.attribute}
        for name, spec in schema.attributes.items():
            if spec.required and name not in given:
                raise FrontendError(
                    f"{node.op_type} node '{node.name or f'#{i}'}': required attribute "
                    f"'{name}' is missing (the operator at opset {opset} takes it)"
                )
        for _, sub in subgraphs(node):
            _check_required_attributes(sub, opset)


def upgrade_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` itself if its default-domain opset is supported, else the model upgraded to
    UPGRADE_TO_OPSET by onnx.version_converter; FrontendError with its reason if it cannot."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= MIN_OPSET or opset == 0:  # 0: no default-domain operators to upgrade
        return model
    _check_required_attributes(model.graph, opset)
    batched = check_scan8(model) if opset < 9 else (set(), set())
    try:
        converted = version_converter.convert_version(model, UPGRADE_TO_OPSET)
    except Exception as e:  # the converter reports unconvertible nodes as RuntimeError & co.
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(
            f"ONNX opset {opset} model could not be upgraded to opset {UPGRADE_TO_OPSET} by "
            f"onnx's version converter: {why}"
        ) from None
    return restore_batch_axes(model, converted, batched)
