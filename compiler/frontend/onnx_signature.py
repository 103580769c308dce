"""A model file's graph inputs and outputs, read without parsing its weights.

`ziggurat run` binds symbolic dims before it compiles (compiler/symbolic_model.py), and a
compile-cache hit then costs a hash of the file: parsing the whole protobuf (1.5 s for GPT-2's
650 MB) only to see the inputs would cost more than the hit. The protobuf wire format lets the
graph's fields be walked with the initializers skipped by their length; only the input and
output ValueInfoProtos and each initializer's name are decoded.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 5, 11, 12  # GraphProto fields
_TENSOR_NAME = 8  # TensorProto.name


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
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found = _read(mm)
    except (OSError, ValueError):
        return None
    return found


def _read(
    mm: mmap.mmap,
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto], set[str]] | None:
    """_signature of the mapped file; the views into it are gone when this returns (the map
    cannot close while one lives, a failure's traceback included)."""
    data = memoryview(mm)
    try:
        return _signature(data)
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
