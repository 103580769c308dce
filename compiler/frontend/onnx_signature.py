"""A model file's graph inputs and outputs, read without parsing its weights.

`ziggurat run` binds symbolic dims before it compiles (compiler/symbolic_model.py), and a
compile-cache hit then costs a hash of the file: parsing the whole protobuf (1.5 s for GPT-2's
650 MB) only to see the inputs would cost more than the hit. The protobuf wire format lets the
graph's fields be walked with the initializers skipped by their length; only the input and
output ValueInfoProtos and each initializer's name are decoded.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import onnx
from google.protobuf.message import DecodeError

_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 5, 11, 12  # GraphProto fields
_TENSOR_NAME = 8  # TensorProto.name


T = TypeVar("T")


class _Malformed(Exception):
    pass


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: memoryview) -> list[tuple[int, memoryview | None]]:
    """(field number, bytes of a length-delimited field or None) for each field of a message."""
    out: list[tuple[int, memoryview | None]] = []
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        kind = tag & 7
        if kind == 0:
            _, at = _varint(data, at)
            out.append((tag >> 3, None))
        elif kind == 1 or kind == 5:
            at += 8 if kind == 1 else 4
            out.append((tag >> 3, None))
        elif kind == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise _Malformed
            out.append((tag >> 3, data[at : at + size]))
            at += size
        else:
            raise _Malformed
    if at != len(data):
        raise _Malformed
    return out


def graph_signature(
    path: str | Path,
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto], set[str]] | None:
    """(graph inputs, graph outputs, initializer names) of the model file, or None when it
    cannot be read so (not a file, not the wire format): load_model then says what is wrong."""
    return _mapped(path, _signature)


def _mapped(path: str | Path, parse: Callable[[memoryview], T]) -> T | None:
    """`parse` of the file's bytes, mapped; None when it cannot be read or parsed."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found = _read(mm, parse)
    except (OSError, ValueError):
        return None
    return found


def _read(mm: mmap.mmap, parse: Callable[[memoryview], T]) -> T | None:
    """`parse` of the mapped file; the views into it are gone when this returns (the map
    cannot close while one lives, a failure's traceback included)."""
    data = memoryview(mm)
    try:
        return parse(data)
    except (_Malformed, DecodeError, UnicodeDecodeError):
        return None
    finally:
        data.release()


def _signature(
    data: memoryview,
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto], set[str]]:
    graphs = [b for n, b in _fields(data) if n == _MODEL_GRAPH and b is not None]
    if len(graphs) != 1:
        raise _Malformed
    inputs: list[onnx.ValueInfoProto] = []
    outputs: list[onnx.ValueInfoProto] = []
    inits: set[str] = set()
    for number, body in _fields(graphs[0]):
        if body is None:
            continue
        if number in (_GRAPH_INPUT, _GRAPH_OUTPUT):
            info = onnx.ValueInfoProto.FromString(bytes(body))
            (inputs if number == _GRAPH_INPUT else outputs).append(info)
        elif number == _GRAPH_INITIALIZER:
            names = [b for n, b in _fields(body) if n == _TENSOR_NAME and b is not None]
            inits.update(bytes(b).decode() for b in names)
    return inputs, outputs, inits


_GRAPH_NODE = 1  # GraphProto.node
_TENSOR_PAYLOAD = {4, 5, 6, 7, 9, 10, 11, 13}  # TensorProto's data fields, external_data's too
SMALL_TENSOR_BYTES = 4096
"""Initializers up to this size keep their values in a skeleton (shape constants, axes)."""


def graph_skeleton(path: str | Path) -> onnx.GraphProto | None:
    """The model file's graph without its weights: nodes, inputs, outputs, and initializers
    with their names, dims and types (values only for those of at most SMALL_TENSOR_BYTES),
    for analyses of the graph's structure (compiler/frontend/symbolic_shapes.py); None when the
    file cannot be read so."""
    return _mapped(path, _skeleton)


def _skeleton(data: memoryview) -> onnx.GraphProto:
    graphs = [b for n, b in _fields(data) if n == _MODEL_GRAPH and b is not None]
    if len(graphs) != 1:
        raise _Malformed
    kept = bytearray()
    at, body = 0, graphs[0]
    while at < len(body):
        start = at
        tag, at = _varint(body, at)
        at = _skip(body, at, tag & 7)
        if tag >> 3 != _GRAPH_INITIALIZER:
            kept += body[start:at]
            continue
        head, at = _varint(body, start)
        size, at = _varint(body, at)
        tensor = body[at : at + size]
        at += size
        if size > SMALL_TENSOR_BYTES:
            tensor = memoryview(_without(tensor, _TENSOR_PAYLOAD))
        kept += _encode_varint(head) + _encode_varint(len(tensor)) + tensor
    return onnx.GraphProto.FromString(bytes(kept))


def _skip(data: memoryview, at: int, kind: int) -> int:
    """The offset after a field's value of wire type `kind` starting at `at`."""
    if kind == 0:
        return _varint(data, at)[1]
    if kind in (1, 5):
        return at + (8 if kind == 1 else 4)
    if kind == 2:
        size, at = _varint(data, at)
        if at + size > len(data):
            raise _Malformed
        return at + size
    raise _Malformed


def _without(message: memoryview, numbers: set[int]) -> bytes:
    """The message's bytes with the fields of these numbers left out."""
    out, at = bytearray(), 0
    while at < len(message):
        start = at
        tag, at = _varint(message, at)
        at = _skip(message, at, tag & 7)
        if tag >> 3 not in numbers:
            out += message[start:at]
    return bytes(out)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
