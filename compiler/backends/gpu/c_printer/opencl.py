"""The OpenCL C 1.2 flavour (pyopencl): its scalar and vector types (vectors of 2, 3, 4, 8, 16
lanes), vload/vstore, whole-vector ops, the `__kernel` buffer-plus-byte-offset parameters and
its prelude."""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.c_types import _Elem, _Vec
from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.flavour import _C_KEYWORDS, _C_SCALARS, _Flavour
from compiler.backends.gpu.c_printer.op_tables import (
    _CMPF,
    _CMPF_NAMES,
    _CMPI_NAMES,
    _FLOAT_OPERATORS,
    _MATH_BINARY,
    _MATH_UNARY,
    _op_name,
    _predicate,
)

_OPENCL_RESERVED = frozenset(
    "kernel __kernel global __global local __local constant __constant private __private "
    "read_only write_only read_write __read_only __write_only __read_write image1d_t image2d_t "
    "image3d_t sampler_t event_t half bool uchar ushort uint ulong char short int long float "
    "double void vec_step".split()
)


def _offset(ptr: str, index: str) -> str:
    return ptr if index == "0" else f"{ptr} + {index}"


_OPENCL_SCALARS = _C_SCALARS | {("i", 64): "long", ("i", 8): "char"}
_OPENCL_UNSIGNED = {64: "ulong", 32: "uint", 16: "ushort", 8: "uchar", 1: "uint"}
_OPENCL_WIDTHS = (2, 3, 4, 8, 16)

_OPENCL_PRELUDE = """\
#ifndef ZG_PRELUDE
#define ZG_PRELUDE
/* MLIR's maximumf / minimumf: NaN if either operand is NaN (fmax / fmin ignore a NaN); the same
   text works on scalars and on vectors, where `?:` selects per lane */
#define ZG_MAXIMUMF(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmax((a), (b)))
#define ZG_MINIMUMF(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmin((a), (b)))
#endif
"""


class _OpenCL(_Flavour):
    name = "opencl"
    kernel_prefix = "__kernel void"
    device_prefix = "void"
    reserved = _OPENCL_RESERVED | _C_KEYWORDS
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    i1_mask = True
    scalars = _OPENCL_SCALARS
    unsigned = _OPENCL_UNSIGNED
    byte = "uchar"
    long_suffix = "L"

    def storage(self, lanes: int) -> int:
        if lanes == 1:
            return 1
        for width in _OPENCL_WIDTHS:
            if lanes <= width:
                return width
        raise _Unsupported(f"OpenCL vectors have at most 16 lanes (got {lanes})")

    def vtype(self, v: _Vec) -> str:
        base = self.ctype(v.elem)
        return base if v.storage == 1 else f"{base}{v.storage}"

    def lane(self, x: str, i: int) -> str:
        return f"{x}.s{i:x}"

    def construct(self, v: _Vec, lanes: Sequence[str]) -> str:
        if v.storage == 1:
            return lanes[0]
        parts = list(lanes)
        if v.elem.kind == "i" and v.elem.bits in (8, 16):  # C computes on these in int
            scalar = self.ctype(v.elem)
            parts = [x if re.fullmatch(r"[\w.]+", x) else f"({scalar})({x})" for x in parts]
        pad = {32: "0.0f", 64: "0.0"}[v.elem.bits] if v.elem.is_float else "0"
        parts += [pad] * (v.storage - len(lanes))  # lanes past the vector's end: never read
        return f"({self.vtype(v)})({', '.join(parts)})"

    def splat(self, v: _Vec, x: str) -> str:
        return x if v.storage == 1 else f"({self.vtype(v)})({x})"

    def vload(self, v: _Vec, ptr: str, index: str) -> str | None:
        if v.storage != v.lanes or v.elem.is_bool or v.storage == 1:
            return None
        return f"vload{v.lanes}(0, {_offset(ptr, index)})"

    def vstore(self, v: _Vec, value: str, ptr: str, index: str) -> str | None:
        if v.storage != v.lanes or v.elem.is_bool or v.storage == 1:
            return None
        return f"vstore{v.lanes}({value}, 0, {_offset(ptr, index)});"

    def native(self, op: Operation, elems: Sequence[_Elem]) -> bool:
        name = _op_name(op)
        e = elems[0]
        if name == "arith.select":  # a scalar condition picks whole vectors
            return True
        if name in _FLOAT_OPERATORS or name in _MATH_BINARY or name in _MATH_UNARY:
            return e.is_float
        if name in ("arith.negf", "arith.maximumf", "arith.minimumf"):
            return e.is_float
        if name in ("math.isnan", "math.isinf", "math.isfinite"):
            return e == _Elem("f", 32)  # a double vector's class test gives a long mask
        if name == "arith.cmpf":
            predicate = _CMPF_NAMES[_predicate(op)]
            return e == _Elem("f", 32) and predicate in _CMPF
        if name == "arith.cmpi":
            predicate = _CMPI_NAMES[_predicate(op)]
            return e.bits == 32 and not predicate.startswith("u")
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            return True
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            return e.is_index
        return False

    def math(self, fn: str, e: _Elem) -> str:
        return fn

    def fma(self, e: _Elem, vector: bool, a: str, b: str, c: str) -> str | None:
        return f"fma({a}, {b}, {c})"

    def maximumf(self, e: _Elem, a: str, b: str, maximum: bool) -> str:
        return f"ZG_{'MAXIMUMF' if maximum else 'MINIMUMF'}({a}, {b})"

    def bitcast(self, src: _Elem, dst: _Elem, x: str) -> str:
        return f"as_{self.ctype(dst)}({x})"

    def fpowi(self, e: _Elem, a: str, b: str) -> str:
        return f"pown({a}, (int){b})"

    def special(self, kind: str, dim: int) -> str:
        fn = {
            "thread_id": "get_local_id",
            "block_id": "get_group_id",
            "block_dim": "get_local_size",
            "grid_dim": "get_num_groups",
            "global_id": "get_global_id",
        }[kind]
        return f"(int){fn}({dim})"

    def address_space(self, space: str) -> str:
        return {"global": "__global ", "local": "__local ", "private": ""}[space]

    def workgroup_array(self, ctype: str, name: str, size: int) -> str:
        return f"__local {ctype} {name}[{size}];"

    def kernel_params(self, k: int, ctype: str) -> list[str]:
        return [f"__global {ctype}* arg{k}_buf", f"const ulong arg{k}_byte_offset"]

    def kernel_prologue(self, k: int, ctype: str) -> list[str]:
        return [
            f"__global {ctype}* arg{k} = "
            f"(__global {ctype}*)((__global char*)arg{k}_buf + arg{k}_byte_offset);"
        ]

    def prelude(self, uses_f64: bool) -> str:
        pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if uses_f64 else ""
        return pragma + _OPENCL_PRELUDE
