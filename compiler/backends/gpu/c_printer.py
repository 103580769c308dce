"""A gpu.module's kernels (or one loop-level func.func) as OpenCL C or CUDA C.

One printer, two flavours, as TVM's codegen_c with codegen_opencl / codegen_cuda: the op-by-op
translation is shared and a flavour supplies what differs between the languages (qualifiers,
vector types and constructors, math function names, thread ids, barriers, workgroup buffers).

Kernels follow the KERNEL PARAMETER CONVENTION the runtimes rely on: argument k of a gpu.func
(a memref) is `__global T* argk_buf, const ulong argk_byte_offset` in OpenCL (the body shifts the
pointer first) and `T* argk` in CUDA (the host shifts it); the kernel applies each memref type's
static offset and strides itself, so a view (subview, expand/collapse_shape, reinterpret_cast,
cast) prints no code, only its result type's layout is used by the loads and stores through it.

Values: every SSA value is a fresh C local `vN` (scalar integer and float constants are inlined
as literals); index is `int`; i1 is an int holding 0 or 1 (one byte, uchar, in memory). A
vector<N x T> is an OpenCL `TN` (N of 5..7 and 9..15 live in the next wider type, whose extra
lanes are never read back; an i1 vector is an `intN` mask of 0 / -1 as OpenCL's comparisons
make) or a CUDA `TN` with N <= 4 (0 / 1 lanes for i1); vector<1 x T> is a scalar. Ops with no
whole-vector form in a flavour are printed lane by lane.

Semantics kept from MLIR: maximumf / minimumf propagate NaN (the prelude's helpers; fmax / fmin
alone would drop it), cmpf's unordered predicates are true on NaN, integer arithmetic wraps
(computed unsigned), shifts and divisions take the signedness of the op. gpu.barrier also fences
global memory in OpenCL, as __syncthreads does in CUDA. Not kept: the order of -0.0 and +0.0 in
maximumf / minimumf (C's fmax may return either zero).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, gpu
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    SymbolRefAttr,
    UnregisteredOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import SymbolTable

from compiler.errors import CompileError

FLAVOURS = ("opencl", "cuda")
"""The C dialects the printer writes: OpenCL C 1.2 (pyopencl) and CUDA C++ (nvcc, NVRTC)."""


class PrintError(CompileError):
    """An op or type the C printer cannot express; the message names the op and the function."""


class _Unsupported(Exception):
    """Raised inside an op's translation; the op loop adds the op and the function's name."""


# -- element types ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Elem:
    """A scalar element type: kind "f" (float), "i" (signless integer) or "index"."""

    kind: str
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.kind == "i" and self.bits == 1

    @property
    def is_index(self) -> bool:
        return self.kind == "index"


_INDEX = _Elem("index", 32)


def _elem(t: Attribute) -> _Elem:
    """The element type of a scalar type; _Unsupported for anything else."""
    if isinstance(t, Float32Type):
        return _Elem("f", 32)
    if isinstance(t, Float64Type):
        return _Elem("f", 64)
    if isinstance(t, IndexType):
        return _INDEX
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return _Elem("i", t.width.data)
    raise _Unsupported(f"type {t} has no C equivalent here")


@dataclass(frozen=True)
class _Vec:
    """A rank-1 vector type: its element, lane count and the lanes of its C type (1: a scalar)."""

    elem: _Elem
    lanes: int
    storage: int


# -- flavours -----------------------------------------------------------------------------------

_MATH_UNARY = {
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.log": "log",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.log1p": "log1p",
    "math.expm1": "expm1",
    "math.sqrt": "sqrt",
    "math.rsqrt": "rsqrt",
    "math.cbrt": "cbrt",
    "math.tanh": "tanh",
    "math.erf": "erf",
    "math.erfc": "erfc",
    "math.absf": "fabs",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",
    "math.roundeven": "rint",
    "math.trunc": "trunc",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
}
"""math ops that are one C math function of one argument (OpenCL name; CUDA adds `f` for f32)."""

_MATH_BINARY = {
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.copysign": "copysign",
    "arith.remf": "fmod",
    "arith.maxnumf": "fmax",
    "arith.minnumf": "fmin",
}
"""Ops that are one C math function of two arguments (maxnum/minnum ignore a NaN operand, as
C's fmax/fmin do)."""

_FLOAT_OPERATORS = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}

_CMPF = {
    "oeq": "({a} == {b})",
    "ogt": "({a} > {b})",
    "oge": "({a} >= {b})",
    "olt": "({a} < {b})",
    "ole": "({a} <= {b})",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "({a} != {b})",
    "uno": "({a} != {a} || {b} != {b})",
}
"""arith.cmpf predicates as C: C's comparisons are false on NaN (ordered), their negations true
(unordered); `!=` is true on NaN. In OpenCL the same text on float vectors gives 0 / -1 masks."""

_CMPF_NAMES = CMPF_COMPARISON_OPERATIONS  # in MLIR's predicate order
_CMPI_NAMES = CMPI_COMPARISON_OPERATIONS
_CMPI_OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

_OPENCL_RESERVED = frozenset(
    "kernel __kernel global __global local __local constant __constant private __private "
    "read_only write_only read_write __read_only __write_only __read_write image1d_t image2d_t "
    "image3d_t sampler_t event_t half bool uchar ushort uint ulong char short int long float "
    "double void vec_step".split()
)
_CUDA_RESERVED = frozenset(
    "__global__ __device__ __shared__ __constant__ __host__ threadIdx blockIdx blockDim gridDim "
    "warpSize class template typename namespace new delete operator this bool true false".split()
)
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while main".split()
)


class _Flavour:
    """What differs between the C dialects (the shared translation is in _FunctionPrinter)."""

    name = ""
    kernel_prefix = ""
    device_prefix = ""
    reserved: frozenset[str] = frozenset()
    barrier = ""
    i1_mask = False
    """Whether an i1 vector lane holds 0 / -1 (OpenCL's comparison masks) rather than 0 / 1."""

    # types
    def ctype(self, e: _Elem) -> str:
        raise NotImplementedError

    def mem_ctype(self, e: _Elem) -> str:
        """The C type of a memref element (i1 is one byte)."""
        raise NotImplementedError

    def utype(self, e: _Elem) -> str:
        raise NotImplementedError

    def storage(self, lanes: int) -> int:
        """Lanes of the C vector type that holds `lanes` lanes."""
        raise NotImplementedError

    def vtype(self, v: _Vec) -> str:
        raise NotImplementedError

    def long_suffix(self) -> str:
        raise NotImplementedError

    # vectors
    def lane(self, x: str, i: int) -> str:
        raise NotImplementedError

    def construct(self, v: _Vec, lanes: Sequence[str]) -> str:
        raise NotImplementedError

    def splat(self, v: _Vec, x: str) -> str:
        raise NotImplementedError

    def vload(self, v: _Vec, ptr: str, index: str) -> str | None:
        """A whole-vector load of v.lanes contiguous elements, or None (load lane by lane)."""
        return None

    def vstore(self, v: _Vec, value: str, ptr: str, index: str) -> str | None:
        return None

    def native(self, op: Operation, elems: Sequence[_Elem]) -> bool:
        """Whether op's scalar C text is also correct on whole vectors of `elems` operands (a
        select with a vector condition never gets here)."""
        return False

    # functions
    def math(self, fn: str, e: _Elem) -> str:
        raise NotImplementedError

    def fma(self, e: _Elem, vector: bool, a: str, b: str, c: str) -> str | None:
        """a * b + c rounded once, on scalars or (None: no such form) on whole vectors."""
        raise NotImplementedError

    def maximumf(self, e: _Elem, a: str, b: str, maximum: bool) -> str:
        raise NotImplementedError

    def bitcast(self, src: _Elem, dst: _Elem, x: str) -> str:
        raise NotImplementedError

    def fpowi(self, e: _Elem, a: str, b: str) -> str:
        raise NotImplementedError

    # work-items and memory
    def special(self, kind: str, dim: int) -> str:
        raise NotImplementedError

    def address_space(self, space: str) -> str:
        return ""

    def workgroup_array(self, ctype: str, name: str, size: int) -> str:
        raise NotImplementedError

    def kernel_params(self, k: int, ctype: str) -> list[str]:
        raise NotImplementedError

    def kernel_prologue(self, k: int, ctype: str) -> list[str]:
        return []

    def prelude(self, uses_f64: bool) -> str:
        raise NotImplementedError


def _offset(ptr: str, index: str) -> str:
    return ptr if index == "0" else f"{ptr} + {index}"


_OPENCL_SCALARS = {
    ("f", 32): "float",
    ("f", 64): "double",
    ("i", 64): "long",
    ("i", 32): "int",
    ("i", 16): "short",
    ("i", 8): "char",
    ("i", 1): "int",
    ("index", 32): "int",
}
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

    def ctype(self, e: _Elem) -> str:
        return _OPENCL_SCALARS[(e.kind, e.bits)]

    def mem_ctype(self, e: _Elem) -> str:
        return "uchar" if e.is_bool else self.ctype(e)

    def utype(self, e: _Elem) -> str:
        return _OPENCL_UNSIGNED[e.bits]

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

    def long_suffix(self) -> str:
        return "L"

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


_CUDA_SCALARS = {
    ("f", 32): "float",
    ("f", 64): "double",
    ("i", 64): "long long",
    ("i", 32): "int",
    ("i", 16): "short",
    ("i", 8): "signed char",
    ("i", 1): "int",
    ("index", 32): "int",
}
_CUDA_VECTOR_BASES = {
    ("f", 32): "float",
    ("f", 64): "double",
    ("i", 64): "longlong",
    ("i", 32): "int",
    ("i", 16): "short",
    ("i", 8): "char",
    ("i", 1): "int",
    ("index", 32): "int",
}
_CUDA_UNSIGNED = {
    64: "unsigned long long",
    32: "unsigned int",
    16: "unsigned short",
    8: "unsigned char",
    1: "unsigned int",
}
_CUDA_LANES = "xyzw"


def _cuda_vector_helpers() -> str:
    """float2/3/4 operators and fma: CUDA's vector types are plain structs."""
    lines = []
    for n in (2, 3, 4):
        t = f"float{n}"
        fields = _CUDA_LANES[:n]

        def build(lane: Callable[[str], str], t: str = t, fields: str = fields) -> str:
            return f"make_{t}({', '.join(lane(f) for f in fields)})"

        for op in "+-*/":

            def binary(f: str, op: str = op) -> str:
                return f"a.{f} {op} b.{f}"

            body = build(binary)
            lines.append(
                f"__device__ __forceinline__ {t} operator{op}({t} a, {t} b) {{ return {body}; }}"
            )
        body = build(lambda f: f"-a.{f}")
        lines.append(f"__device__ __forceinline__ {t} operator-({t} a) {{ return {body}; }}")
        body = build(lambda f: f"fmaf(a.{f}, b.{f}, c.{f})")
        lines.append(
            f"__device__ __forceinline__ {t} zg_fma({t} a, {t} b, {t} c) {{ return {body}; }}"
        )
    return "\n".join(lines)


_CUDA_PRELUDE = f"""\
#ifndef ZG_PRELUDE
#define ZG_PRELUDE
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
/* MLIR's maximumf / minimumf: NaN if either operand is NaN (fmaxf / fminf ignore a NaN) */
__device__ __forceinline__ float zg_maximumf(float a, float b) {{ return (isnan(a) || isnan(b)) ? a + b : fmaxf(a, b); }}
__device__ __forceinline__ float zg_minimumf(float a, float b) {{ return (isnan(a) || isnan(b)) ? a + b : fminf(a, b); }}
__device__ __forceinline__ double zg_maximumf(double a, double b) {{ return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }}
__device__ __forceinline__ double zg_minimumf(double a, double b) {{ return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }}
/* vector<2..4 x f32> arithmetic: CUDA's float2/3/4 are structs without operators */
{_cuda_vector_helpers()}
#endif
"""


class _Cuda(_Flavour):
    name = "cuda"
    kernel_prefix = 'extern "C" __global__ void'
    device_prefix = "__device__ void"
    reserved = _CUDA_RESERVED | _C_KEYWORDS
    barrier = "__syncthreads();"

    def ctype(self, e: _Elem) -> str:
        return _CUDA_SCALARS[(e.kind, e.bits)]

    def mem_ctype(self, e: _Elem) -> str:
        return "unsigned char" if e.is_bool else self.ctype(e)

    def utype(self, e: _Elem) -> str:
        return _CUDA_UNSIGNED[e.bits]

    def storage(self, lanes: int) -> int:
        if lanes > 4:
            raise _Unsupported(
                f"CUDA vector types have at most 4 lanes (got {lanes}); schedule the kernel "
                "with a vector width of at most 4"
            )
        return lanes

    def vtype(self, v: _Vec) -> str:
        if v.storage == 1:
            return self.ctype(v.elem)
        return f"{_CUDA_VECTOR_BASES[(v.elem.kind, v.elem.bits)]}{v.storage}"

    def long_suffix(self) -> str:
        return "LL"

    def lane(self, x: str, i: int) -> str:
        return f"{x}.{_CUDA_LANES[i]}"

    def construct(self, v: _Vec, lanes: Sequence[str]) -> str:
        if v.storage == 1:
            return lanes[0]
        return f"make_{self.vtype(v)}({', '.join(lanes)})"

    def splat(self, v: _Vec, x: str) -> str:
        return self.construct(v, [x] * v.storage)

    def native(self, op: Operation, elems: Sequence[_Elem]) -> bool:
        if _op_name(op) == "arith.select":  # a scalar condition picks whole vectors
            return True
        f32 = elems[0] == _Elem("f", 32)
        return f32 and (_op_name(op) in _FLOAT_OPERATORS or _op_name(op) == "arith.negf")

    def math(self, fn: str, e: _Elem) -> str:
        return f"{fn}f" if e.bits == 32 else fn

    def fma(self, e: _Elem, vector: bool, a: str, b: str, c: str) -> str | None:
        if vector:  # the prelude's float2/3/4 overloads
            return f"zg_fma({a}, {b}, {c})" if e.bits == 32 else None
        return f"{self.math('fma', e)}({a}, {b}, {c})"

    def maximumf(self, e: _Elem, a: str, b: str, maximum: bool) -> str:
        return f"zg_{'maximumf' if maximum else 'minimumf'}({a}, {b})"

    def bitcast(self, src: _Elem, dst: _Elem, x: str) -> str:
        fn = {
            ("f", "i", 32): "__float_as_int",
            ("i", "f", 32): "__int_as_float",
            ("f", "i", 64): "__double_as_longlong",
            ("i", "f", 64): "__longlong_as_double",
        }[(src.kind, dst.kind, dst.bits)]
        return f"{fn}({x})"

    def fpowi(self, e: _Elem, a: str, b: str) -> str:
        return f"{self.math('pow', e)}({a}, ({self.ctype(e)}){b})"

    def special(self, kind: str, dim: int) -> str:
        axis = "xyz"[dim]
        if kind == "global_id":
            return f"(int)(blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis})"
        var = {
            "thread_id": "threadIdx",
            "block_id": "blockIdx",
            "block_dim": "blockDim",
            "grid_dim": "gridDim",
        }[kind]
        return f"(int){var}.{axis}"

    def workgroup_array(self, ctype: str, name: str, size: int) -> str:
        return f"__shared__ {ctype} {name}[{size}];"

    def kernel_params(self, k: int, ctype: str) -> list[str]:
        return [f"{ctype}* arg{k}"]

    def prelude(self, uses_f64: bool) -> str:
        return _CUDA_PRELUDE


def _flavour(name: str) -> _Flavour:
    if name == "opencl":
        return _OpenCL()
    if name == "cuda":
        return _Cuda()
    raise PrintError(f"unknown C flavour '{name}' (known: {', '.join(FLAVOURS)})")


# -- attributes and layouts ----------------------------------------------------------------------


def _op_name(op: Operation) -> str:
    """The op's name; for an op xDSL does not define (math.isnan, arith.remf, ...) the name it
    was parsed with (when the context allows unregistered ops)."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _predicate(op: Operation | None) -> int:
    attr = None if op is None else op.properties.get("predicate")
    if not isinstance(attr, IntegerAttr):
        raise _Unsupported("the comparison has no predicate")
    return attr.value.data


def _float_literal(value: float, bits: int) -> str:
    """An exact C literal: the shortest decimal that reads back as the same f32 (or f64)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    if bits == 32:
        f = np.float32(value)
        if f != 0 and not 1e-4 <= abs(f) < 1e16:
            text = np.format_float_scientific(f, unique=True, trim="0") + "f"
        else:
            text = np.format_float_positional(f, unique=True, trim="0") + "f"
    else:
        text = repr(float(value))
        if not any(c in text for c in ".e"):
            text += ".0"
    return f"({text})" if text.startswith("-") else text


def _layout(t: MemRefType, what: str = "memref") -> tuple[list[int], int]:
    """Static (strides, offset) of a memref type, in elements."""
    shape = list(t.get_shape())
    layout = t.layout
    if isinstance(layout, NoneAttr):
        if any(d < 0 for d in shape):
            raise _Unsupported(f"{what} type {t} has a dynamic shape")
        strides: list[int] = []
        running = 1
        for d in reversed(shape):
            strides.insert(0, running)
            running *= d
        return strides, 0
    if isinstance(layout, StridedLayoutAttr):
        got, offset = layout.get_strides(), layout.get_offset()
        if offset is None or any(s is None for s in got):
            raise _Unsupported(f"{what} type {t} has a dynamic offset or stride")
        return [s for s in got if s is not None], offset
    raise _Unsupported(f"{what} type {t} has a layout that is not strided")


def _extent(t: MemRefType) -> int:
    """Elements a buffer of type t spans from its pointer (offset included)."""
    shape = list(t.get_shape())
    if any(d < 0 for d in shape):
        raise _Unsupported(f"memref type {t} has a dynamic shape")
    if 0 in shape:
        return 1
    strides, offset = _layout(t)
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _memory_space(t: MemRefType) -> int:
    space = t.memory_space
    if isinstance(space, NoneAttr):
        return 0
    if isinstance(space, IntegerAttr):
        return space.value.data
    if isinstance(space, IntAttr):
        return space.data
    raise _Unsupported(f"memory space {space} is not a number")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCAL_NAME = re.compile(r"(v|arg)[0-9]+(_.*)?|zg_.*|ZG_.*")
"""Names the printer gives its own locals (and helpers): symbols may not take them."""


# -- the function printer ------------------------------------------------------------------------


@dataclass
class _Pointer:
    """A memref value in C: the pointer it is addressed from, and that pointer's address space."""

    name: str
    space: str


class _FunctionPrinter:
    """Prints one function (print() returns its text; `uses_f64` then says whether the program
    needs OpenCL's fp64 extension)."""

    def __init__(self, fn: Operation, flavour: _Flavour, kernel: bool):
        if not isinstance(fn, gpu.FuncOp | func.FuncOp):
            raise PrintError(f"print_function takes a gpu.func or func.func, not '{fn.name}'")
        self.fn: gpu.FuncOp | func.FuncOp = fn
        self.fl = flavour
        self.kernel = kernel
        self.fn_name = fn.sym_name.data
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.names: dict[SSAValue, str] = {}
        self.ints: dict[SSAValue, int] = {}  # values of integer constants (index folding)
        self.pointers: dict[SSAValue, _Pointer] = {}
        self.workgroup: dict[str, str] = {}  # symbol -> C array name
        self.uses_f64 = False

    # ---------------------------------------------------------------------------- driver
    def error(self, op: Operation, reason: str) -> PrintError:
        return PrintError(
            f"{self.fl.name}: cannot print '{_op_name(op)}' in function @{self.fn_name}: {reason}"
        )

    def print(self) -> str:
        fn = self.fn
        name = self.fn_name
        if (
            not _IDENTIFIER.fullmatch(name)
            or name in self.fl.reserved
            or name[:3] in ("zg_", "ZG_")
        ):
            raise self.error(
                fn,
                f"'{name}' is not a usable {self.fl.name} function name (not a C identifier, "
                "a keyword, or a name of the printer's helpers)",
            )
        ftype = fn.function_type
        if ftype.outputs.data:
            raise self.error(fn, "a kernel returns no results (it writes its memref arguments)")
        region = fn.body
        if len(region.blocks) != 1:
            raise self.error(
                fn,
                "a kernel body is one block (unstructured control flow or an "
                "external declaration cannot be printed)",
            )
        block = region.blocks[0]
        if len(block.args) != len(ftype.inputs.data):
            raise self.error(
                fn,
                "workgroup or private attributions are not printed (workgroup buffers are "
                "memref.globals in memory space 3, private ones memref.alloca)",
            )
        params, prologue = [], []
        for k, arg in enumerate(block.args):
            try:
                ctype = self.memref_arg(arg.type)
            except _Unsupported as e:
                raise self.error(fn, f"argument {k}: {e}") from None
            self.pointers[arg] = _Pointer(f"arg{k}", "global")
            if self.kernel:
                params.append(", ".join(self.fl.kernel_params(k, ctype)))
                prologue += self.fl.kernel_prologue(k, ctype)
            else:
                params.append(f"{self.fl.address_space('global')}{ctype}* arg{k}")
        self.lines += ["    " + line for line in prologue]
        self.declare_workgroup_buffers(block)
        self.print_block(block)
        prefix = self.fl.kernel_prefix if self.kernel else self.fl.device_prefix
        head = f"{prefix} {self.fn_name}("
        signature = head + (", ".join(params) or "void") + ")"
        if len(signature) > 100:  # one parameter (OpenCL: buffer and byte offset) per line
            signature = head + (",\n" + " " * len(head)).join(params) + ")"
        return signature + "\n{\n" + "\n".join(self.lines) + ("\n" if self.lines else "") + "}\n"

    def memref_arg(self, t: Attribute) -> str:
        if not isinstance(t, MemRefType):
            raise _Unsupported(f"kernel arguments are memrefs (got {t})")
        if _memory_space(t) not in (0, 1):
            raise _Unsupported(f"a kernel argument lives in global memory (got {t})")
        _layout(t, "argument")
        e = self.element(t.element_type)
        return self.fl.mem_ctype(e)

    def declare_workgroup_buffers(self, block: Block) -> None:
        """Workgroup arrays at kernel function scope (OpenCL allows __local nowhere else)."""
        for op in block.walk():
            if op.name != "memref.get_global":
                continue
            try:
                self.workgroup_buffer(op)
            except _Unsupported as e:
                raise self.error(op, str(e)) from None

    def workgroup_buffer(self, op: Operation) -> None:
        ref = op.properties.get("name")
        if not isinstance(ref, SymbolRefAttr):
            raise _Unsupported("the op names no global")
        symbol = ref.root_reference.data
        try:
            glob = SymbolTable.lookup_symbol(op, ref)
        except ValueError:
            glob = None
        if glob is None or glob.name != "memref.global":
            raise _Unsupported(f"no memref.global @{symbol} in the enclosing module")
        t = glob.properties.get("type")
        if not isinstance(t, MemRefType) or _memory_space(t) != 3:
            raise _Unsupported(
                f"@{symbol} is not a workgroup buffer (memory space 3); weights and other "
                "buffers reach a kernel as arguments"
            )
        if not self.kernel and self.fl.name == "opencl":
            raise _Unsupported("OpenCL declares workgroup (__local) buffers in kernels only")
        if symbol not in self.workgroup:
            name = symbol
            if (
                not _IDENTIFIER.fullmatch(name)
                or name in self.fl.reserved
                or _LOCAL_NAME.fullmatch(name)
                or name == self.fn_name
            ):
                name = "zg_" + re.sub(r"[^A-Za-z0-9_]", "_", symbol)
            self.workgroup[symbol] = name
            ctype = self.fl.mem_ctype(self.element(t.element_type))
            self.line(self.fl.workgroup_array(ctype, name, _extent(t)))
        self.pointers[op.results[0]] = _Pointer(self.workgroup[symbol], "local")

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op(op)

    def print_op(self, op: Operation) -> None:
        name = _op_name(op)
        handler = _HANDLERS.get(name)
        if handler is None:
            if name == "scf.parallel":
                raise self.error(
                    op,
                    "parallel loops are not printed; schedule the kernel "
                    "with parallel = 0 (GPU kernels use gpu.thread_id / block_id)",
                )
            raise self.error(op, "the op has no C translation")
        try:
            handler(self, op)
        except PrintError:
            raise
        except _Unsupported as e:
            raise self.error(op, str(e)) from None
        except (AttributeError, KeyError, IndexError, TypeError, ValueError, AssertionError) as e:
            raise self.error(op, f"malformed op ({type(e).__name__}: {e})") from e

    # --------------------------------------------------------------------------- helpers
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def element(self, t: Attribute) -> _Elem:
        e = _elem(t)
        if e == _Elem("f", 64):
            self.uses_f64 = True
        return e

    def vec(self, t: Attribute) -> _Vec | None:
        """The vector layout of a vector type; None for scalars."""
        if not isinstance(t, VectorType):
            return None
        shape = t.get_shape()
        if len(shape) != 1 or any(
            isinstance(d, IntegerAttr) and d.value.data for d in t.scalable_dims.data
        ):
            raise _Unsupported(f"only fixed rank-1 vectors are printed (got {t})")
        e = self.element(t.element_type)
        return _Vec(e, shape[0], self.fl.storage(shape[0]))

    def scalar_of(self, t: Attribute) -> _Elem:
        """The element type of a scalar or vector type."""
        return self.element(t.element_type if isinstance(t, VectorType) else t)

    def ctype(self, t: Attribute) -> str:
        v = self.vec(t)
        if v is not None:
            return self.fl.vtype(v)
        if isinstance(t, MemRefType):
            raise _Unsupported(f"a memref ({t}) cannot be a C value here")
        return self.fl.ctype(self.element(t))

    def expr(self, value: SSAValue) -> str:
        name = self.names.get(value)
        if name is None:
            raise _Unsupported(f"operand {value.name_hint or ''} is not defined in the function")
        return name

    def define(self, value: SSAValue, text: str) -> str:
        """A fresh local holding `text`; returns its name."""
        name = self.fresh()
        self.line(f"{self.ctype(value.type)} {name} = {text};")
        self.names[value] = name
        return name

    def pointer(self, value: SSAValue) -> _Pointer:
        p = self.pointers.get(value)
        if p is None:
            raise _Unsupported("the memref operand has no C pointer (unknown origin)")
        return p

    def address(
        self, memref: SSAValue, indices: Sequence[SSAValue], shift: int = 0
    ) -> tuple[str, str]:
        """(pointer, linear element index) of an access: the type's offset + sum(i_k * s_k),
        plus `shift` elements."""
        t = memref.type
        if not isinstance(t, MemRefType):
            raise _Unsupported(f"{t} is not a memref")
        strides, offset = _layout(t)
        if len(indices) != len(strides):
            raise _Unsupported(f"{len(indices)} indices for a rank-{len(strides)} memref")
        const, terms = offset + shift, []
        for index, stride in zip(indices, strides):
            known = self.ints.get(index)
            if known is not None:
                const += known * stride
            elif stride == 1:
                terms.append(self.expr(index))
            elif stride != 0:
                terms.append(f"{self.expr(index)} * {stride}")
        text = " + ".join(terms)
        if not terms:
            text = str(const)
        elif const > 0:
            text += f" + {const}"
        elif const < 0:
            text += f" - {-const}"
        return self.pointer(memref).name, text

    def int_literal(self, value: int, e: _Elem) -> str:
        if e.is_bool:
            return "1" if value & 1 else "0"
        if e.is_index:
            if not -(2**31) <= value < 2**31:
                raise _Unsupported(f"index constant {value} does not fit the C int of indices")
            return f"({value})" if value < 0 else str(value)
        value = (value + 2 ** (e.bits - 1)) % 2**e.bits - 2 ** (e.bits - 1)  # as signed
        suffix = self.fl.long_suffix() if e.bits == 64 else ""
        if e.bits in (32, 64) and value == -(2 ** (e.bits - 1)):
            return f"(-{2 ** (e.bits - 1) - 1}{suffix} - 1)"
        return f"({value}{suffix})" if value < 0 else f"{value}{suffix}"

    def literal(self, value: float | int, e: _Elem) -> str:
        if e.is_float:
            return _float_literal(float(value), e.bits)
        return self.int_literal(int(value), e)

    # lanes of vector values ------------------------------------------------------------
    def lane_get(self, x: str, v: _Vec, i: int) -> str:
        """Lane i of a vector as a scalar of its element type (i1: 0 or 1)."""
        if v.storage == 1:
            return x
        text = self.fl.lane(x, i)
        return f"({text} & 1)" if v.elem.is_bool and self.fl.i1_mask else text

    def lane_put(self, text: str, v: _Vec) -> str:
        """A scalar as a lane of a vector of v's type."""
        if v.storage > 1 and v.elem.is_bool and self.fl.i1_mask:
            return {"0": "0", "1": "(-1)"}.get(text, f"-({text})")
        return text

    def construct(self, v: _Vec, lanes: Sequence[str]) -> str:
        return self.fl.construct(v, [self.lane_put(x, v) for x in lanes])

    # ------------------------------------------------------------------- scalar semantics
    def signed(self, x: str, e: _Elem) -> str:
        return f"(-{x})" if e.is_bool else x

    def unsigned(self, x: str, e: _Elem) -> str:
        return x if e.is_bool else f"({self.fl.utype(e)}){x}"

    def wrap(self, text: str, e: _Elem) -> str:
        """An integer result back in e's C type (i1: the low bit)."""
        if e.is_bool:
            return f"(({text}) & 1)"
        return f"({self.fl.ctype(e)})({text})"

    def scalar(
        self,
        name: str,
        xs: Sequence[str],
        es: Sequence[_Elem],
        out: _Elem,
        op: Operation | None = None,
    ) -> str:
        """The C text of elementwise op `name` on scalar operands `xs` (C expressions) of types
        `es`, giving `out`; `op` carries the comparison predicates."""
        fl = self.fl
        e = es[0] if es else out
        if name in _FLOAT_OPERATORS:
            return f"{xs[0]} {_FLOAT_OPERATORS[name]} {xs[1]}"
        if name == "arith.negf":
            return f"-{xs[0]}"
        if name in _MATH_UNARY:
            return f"{fl.math(_MATH_UNARY[name], e)}({xs[0]})"
        if name in _MATH_BINARY:
            return f"{fl.math(_MATH_BINARY[name], e)}({xs[0]}, {xs[1]})"
        if name in ("arith.maximumf", "arith.minimumf"):
            return fl.maximumf(e, xs[0], xs[1], name == "arith.maximumf")
        if name in ("math.isnan", "math.isinf", "math.isfinite"):
            return f"{name.split('.')[1]}({xs[0]})"
        if name == "math.fpowi":
            return fl.fpowi(e, xs[0], xs[1])
        if name == "arith.cmpf":
            predicate = _CMPF_NAMES[_predicate(op)]
            if predicate in ("false", "true"):
                return "1" if predicate == "true" else "0"
            return _CMPF[predicate].format(a=xs[0], b=xs[1])
        if name == "arith.cmpi":
            return self.cmpi(_CMPI_NAMES[_predicate(op)], xs[0], xs[1], e)
        if name == "arith.select":
            return f"{xs[0]} ? {xs[1]} : {xs[2]}"
        return self.integer_or_cast(name, xs, es, out)

    def cmpi(self, predicate: str, a: str, b: str, e: _Elem) -> str:
        operator = _CMPI_OPERATORS[predicate[-2:]]
        if predicate.startswith("s"):
            a, b = self.signed(a, e), self.signed(b, e)
        elif predicate.startswith("u"):
            a, b = self.unsigned(a, e), self.unsigned(b, e)
        return f"({a} {operator} {b})"

    def integer_or_cast(self, name: str, xs: Sequence[str], es: Sequence[_Elem], out: _Elem) -> str:
        fl = self.fl
        e = es[0]
        a = xs[0]
        b = xs[1] if len(xs) > 1 else ""
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            operator = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}[name]
            if e.is_index:
                return f"{a} {operator} {b}"
            if e.is_bool:
                return f"({a} & {b})" if operator == "*" else f"({a} ^ {b})"
            return self.wrap(f"{self.unsigned(a, e)} {operator} {self.unsigned(b, e)}", e)
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            operator = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[name]
            return f"({a} {operator} {b})"
        if name == "arith.divsi":
            return f"{a} / {b}"
        if name == "arith.remsi":
            return f"{a} % {b}"
        if name in ("arith.divui", "arith.remui"):
            operator = "/" if name == "arith.divui" else "%"
            return self.wrap(f"{self.unsigned(a, e)} {operator} {self.unsigned(b, e)}", e)
        if name == "arith.ceildivsi":
            return self.wrap(f"{a} / {b} + ({a} % {b} != 0 && ({a} < 0) == ({b} < 0))", e)
        if name == "arith.floordivsi":
            return self.wrap(f"{a} / {b} - ({a} % {b} != 0 && ({a} < 0) != ({b} < 0))", e)
        if name == "arith.ceildivui":
            ua, ub = self.unsigned(a, e), self.unsigned(b, e)
            return self.wrap(f"{ua} / {ub} + ({ua} % {ub} != 0)", e)
        if name == "arith.shli":
            return self.wrap(f"{self.unsigned(a, e)} << {b}", e)
        if name == "arith.shrsi":
            return f"{a} >> {b}" if not e.is_bool else a
        if name == "arith.shrui":
            return self.wrap(f"{self.unsigned(a, e)} >> {b}", e)
        if name in ("arith.maxsi", "arith.minsi"):
            operator = ">" if name == "arith.maxsi" else "<"
            return f"({self.signed(a, e)} {operator} {self.signed(b, e)} ? {a} : {b})"
        if name in ("arith.maxui", "arith.minui"):
            operator = ">" if name == "arith.maxui" else "<"
            return f"({self.unsigned(a, e)} {operator} {self.unsigned(b, e)} ? {a} : {b})"
        if name == "math.absi":
            if e.is_bool:
                return a
            return self.wrap(f"{a} < 0 ? -{self.unsigned(a, e)} : {self.unsigned(a, e)}", e)
        # conversions: `out` is the result's element type
        to = fl.ctype(out)
        if name in ("arith.index_cast", "arith.extsi", "arith.sitofp"):
            return self.convert(self.signed(a, e), out, None if e.is_bool else e)
        if name in ("arith.index_castui", "arith.extui", "arith.uitofp"):
            if e.is_bool or fl.ctype(e) == fl.ctype(out):  # i1 is 0 / 1 already; index <-> i32
                return self.convert(a, out, e)
            return self.convert(self.unsigned(a, e), out)
        if name == "arith.trunci":
            return self.convert(a, out, e)
        if name == "arith.fptosi":
            return f"((int){a} & 1)" if out.is_bool else f"({to}){a}"
        if name == "arith.fptoui":
            return f"(({fl.utype(out)}){a} & 1)" if out.is_bool else f"({to})({fl.utype(out)}){a}"
        if name in ("arith.extf", "arith.truncf"):
            return f"({to}){a}"
        if name == "arith.bitcast":
            if e == out or (not e.is_float and not out.is_float):
                return self.convert(a, out, e)
            if e.bits != out.bits or e.is_index or out.is_index:
                raise _Unsupported(f"bitcast between {e.kind}{e.bits} and {out.kind}{out.bits}")
            return fl.bitcast(e, out, a)
        raise _Unsupported("the op has no C translation")

    def convert(self, text: str, out: _Elem, source: _Elem | None = None) -> str:
        """`text` (of type `source`) converted to `out`."""
        if out.is_bool:
            return text if source is not None and source.is_bool else f"(({text}) & 1)"
        if (
            source is not None
            and not source.is_bool
            and self.fl.ctype(source) == self.fl.ctype(out)
        ):
            return text
        return f"({self.fl.ctype(out)})({text})"


# -- op handlers ---------------------------------------------------------------------------------

Handler = Callable[[_FunctionPrinter, Operation], None]
_HANDLERS: dict[str, Handler] = {}


def _handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            _HANDLERS[name] = fn
        return fn

    return register


_ELEMENTWISE = (
    *_FLOAT_OPERATORS,
    *_MATH_UNARY,
    *_MATH_BINARY,
    "arith.negf",
    "arith.maximumf",
    "arith.minimumf",
    "math.isnan",
    "math.isinf",
    "math.isfinite",
    "math.fpowi",
    "math.absi",
    "arith.cmpf",
    "arith.cmpi",
    "arith.select",
    "arith.addi",
    "arith.subi",
    "arith.muli",
    "arith.andi",
    "arith.ori",
    "arith.xori",
    "arith.divsi",
    "arith.divui",
    "arith.remsi",
    "arith.remui",
    "arith.ceildivsi",
    "arith.ceildivui",
    "arith.floordivsi",
    "arith.shli",
    "arith.shrsi",
    "arith.shrui",
    "arith.maxsi",
    "arith.minsi",
    "arith.maxui",
    "arith.minui",
    "arith.index_cast",
    "arith.index_castui",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "arith.extf",
    "arith.truncf",
    "arith.extsi",
    "arith.extui",
    "arith.trunci",
    "arith.bitcast",
)


@_handles(*_ELEMENTWISE)
def _elementwise(p: _FunctionPrinter, op: Operation) -> None:
    name = _op_name(op)
    if len(op.results) != 1:
        raise _Unsupported("expected one result")
    result = op.results[0]
    es = [p.scalar_of(x.type) for x in op.operands]
    out = p.scalar_of(result.type)
    xs = [p.expr(x) for x in op.operands]
    v = p.vec(result.type)
    if v is None or v.storage == 1:
        p.define(result, p.scalar(name, xs, es, out, op))
        return
    vecs = [p.vec(x.type) for x in op.operands]
    if name == "arith.select" and vecs[0] is not None and vecs[0].storage > 1:
        if p.fl.name == "opencl" and v.elem.bits == 32:  # a 32-bit lane is selected by an int mask
            p.define(result, f"select({xs[2]}, {xs[1]}, {xs[0]})")
            return
    elif p.fl.native(op, es):
        p.define(result, p.scalar(name, xs, es, out, op))
        return
    lanes = []
    for i in range(v.lanes):
        args = [x if w is None else p.lane_get(x, w, i) for x, w in zip(xs, vecs)]
        lanes.append(p.scalar(name, args, es, out, op))
    p.define(result, p.construct(v, lanes))


@_handles("arith.constant")
def _constant(p: _FunctionPrinter, op: Operation) -> None:
    result = op.results[0]
    value = op.properties.get("value", op.attributes.get("value"))
    if isinstance(value, IntegerAttr | FloatAttr):
        e = p.element(result.type)
        number = value.value.data
        p.names[result] = p.literal(number, e)
        if isinstance(value, IntegerAttr):
            p.ints[result] = int(number)
        return
    if isinstance(value, DenseIntOrFPElementsAttr):
        v = p.vec(result.type)
        if v is None:
            raise _Unsupported(f"a dense constant of type {result.type} is not a vector")
        values = list(value.get_values())
        if len(values) == 1 or value.is_splat():
            text = p.literal(values[0], v.elem)
            if v.storage == 1:
                p.names[result] = text
                return
            p.define(result, p.fl.splat(v, p.lane_put(text, v)))
            return
        if v.storage == 1:
            p.names[result] = p.literal(values[0], v.elem)
            return
        p.define(result, p.construct(v, [p.literal(x, v.elem) for x in values]))
        return
    raise _Unsupported(f"constant {value} is not a number or a dense vector")


@_handles("func.return", "gpu.return")
def _return(p: _FunctionPrinter, op: Operation) -> None:
    if op.operands:
        raise _Unsupported("a kernel returns no values")
    if op.next_op is not None or op.parent_op() is not p.fn:
        p.line("return;")


@_handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.global_id")
def _special(p: _FunctionPrinter, op: Operation) -> None:
    dim = op.properties.get("dimension")
    if not isinstance(dim, gpu.DimensionAttr):
        raise _Unsupported("the op has no dimension")
    axis = "xyz".index(dim.data.value)
    p.define(op.results[0], p.fl.special(op.name.split(".")[1], axis))


@_handles("gpu.barrier")
def _barrier(p: _FunctionPrinter, op: Operation) -> None:
    p.line(p.fl.barrier)


# -- structured control flow ---


def _body_block(region: Region) -> Block:
    if len(region.blocks) != 1:
        raise _Unsupported("a region of one block is expected")
    return region.blocks[0]


def _nested(p: _FunctionPrinter, block: Block) -> None:
    p.depth += 1
    p.print_block(block)
    p.depth -= 1


@_handles("scf.for")
def _for(p: _FunctionPrinter, op: Operation) -> None:
    lb, ub, step, *inits = op.operands
    block = _body_block(op.regions[0])
    iv, *iter_args = block.args
    for init, arg, result in zip(inits, iter_args, op.results):
        name = p.fresh()
        p.line(f"{p.ctype(result.type)} {name} = {p.expr(init)};")
        p.names[arg] = p.names[result] = name
    i = p.fresh()
    p.names[iv] = i
    ctype = p.ctype(iv.type)
    p.line(f"for ({ctype} {i} = {p.expr(lb)}; {i} < {p.expr(ub)}; {i} += {p.expr(step)}) {{")
    _nested(p, block)
    p.line("}")


@_handles("scf.if")
def _if(p: _FunctionPrinter, op: Operation) -> None:
    for result in op.results:
        name = p.fresh()
        p.line(f"{p.ctype(result.type)} {name};")
        p.names[result] = name
    then_region, else_region = op.regions[0], op.regions[1]
    p.line(f"if ({p.expr(op.operands[0])}) {{")
    _nested(p, _body_block(then_region))
    if else_region.blocks and (op.results or list(else_region.blocks[0].ops)[:-1]):
        p.line("} else {")
        _nested(p, _body_block(else_region))
    p.line("}")


@_handles("scf.yield")
def _yield(p: _FunctionPrinter, op: Operation) -> None:
    parent = op.parent_op()
    if parent is None or parent.name not in ("scf.for", "scf.if"):
        raise _Unsupported("scf.yield outside scf.for / scf.if")
    types = {p.names[r]: r.type for r in parent.results}
    pairs = [(p.names[r], p.expr(x)) for r, x in zip(parent.results, op.operands)]
    pairs = [(t, x) for t, x in pairs if t != x]
    # a value that an earlier assignment overwrites (a swap): go through temporaries
    if any(x in {t for t, _ in pairs[:k]} for k, (_, x) in enumerate(pairs)):
        temps = []
        for t, x in pairs:
            temp = p.fresh()
            p.line(f"{p.ctype(types[t])} {temp} = {x};")
            temps.append((t, temp))
        pairs = temps
    for t, x in pairs:
        p.line(f"{t} = {x};")


# -- memory ---


@_handles("memref.load")
def _load(p: _FunctionPrinter, op: Operation) -> None:
    memref, *indices = op.operands
    ptr, index = p.address(memref, indices)
    p.define(op.results[0], f"{ptr}[{index}]")


@_handles("memref.store")
def _store(p: _FunctionPrinter, op: Operation) -> None:
    value, memref, *indices = op.operands
    ptr, index = p.address(memref, indices)
    e = p.scalar_of(value.type)
    text = p.expr(value)
    if e.is_bool:
        text = f"({p.fl.mem_ctype(e)}){text}"
    p.line(f"{ptr}[{index}] = {text};")


@_handles("memref.alloca")
def _alloca(p: _FunctionPrinter, op: Operation) -> None:
    t = op.results[0].type
    if op.operands:
        raise _Unsupported("dynamic sizes are not printed")
    if not isinstance(t, MemRefType) or _memory_space(t) != 0:
        raise _Unsupported(f"a private buffer lives in the default memory space (got {t})")
    name = p.fresh()
    p.line(f"{p.fl.mem_ctype(p.element(t.element_type))} {name}[{_extent(t)}];")
    p.pointers[op.results[0]] = _Pointer(name, "private")


@_handles(
    "memref.subview",
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.reinterpret_cast",
    "memref.cast",
)
def _view(p: _FunctionPrinter, op: Operation) -> None:
    # the same pointer; loads and stores read the result type's own offset and strides
    source = p.pointer(op.operands[0])
    result = op.results[0]
    if not isinstance(result.type, MemRefType):
        raise _Unsupported(f"the result {result.type} is not a memref")
    p.pointers[result] = source


@_handles("memref.view")
def _byte_view(p: _FunctionPrinter, op: Operation) -> None:
    source, shift = p.pointer(op.operands[0]), op.operands[1]
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise _Unsupported(f"the result {t} is not a memref")
    ctype = p.fl.mem_ctype(p.element(t.element_type))
    space = p.fl.address_space(source.space)
    name = p.fresh()
    p.line(
        f"{space}{ctype}* {name} = ({space}{ctype}*)(({space}char*){source.name} + "
        f"{p.expr(shift)});"
    )
    p.pointers[op.results[0]] = _Pointer(name, source.space)


@_handles("memref.dim")
def _dim(p: _FunctionPrinter, op: Operation) -> None:
    source, index = op.operands
    t = source.type
    dim = p.ints.get(index)
    if not isinstance(t, MemRefType) or dim is None or t.get_shape()[dim] < 0:
        raise _Unsupported("only static dimensions of a constant index are printed")
    size = t.get_shape()[dim]
    p.names[op.results[0]] = str(size)
    p.ints[op.results[0]] = size


@_handles("memref.get_global")
def _get_global(p: _FunctionPrinter, op: Operation) -> None:
    if op.results[0] not in p.pointers:  # declared at the top of the kernel
        p.workgroup_buffer(op)


# -- vectors ---


def _vec_of(p: _FunctionPrinter, value: SSAValue) -> _Vec:
    v = p.vec(value.type)
    if v is None:
        raise _Unsupported(f"{value.type} is not a vector")
    return v


def _lane_step(memref: SSAValue) -> int:
    """Elements between the lanes of a vector access: the innermost stride (1 in valid IR)."""
    t = memref.type
    assert isinstance(t, MemRefType)
    strides = _layout(t)[0]
    return strides[-1] if strides else 1


@_handles("vector.load")
def _vector_load(p: _FunctionPrinter, op: Operation) -> None:
    memref, *indices = op.operands
    result = op.results[0]
    v = _vec_of(p, result)
    ptr, index = p.address(memref, indices)
    step = _lane_step(memref)
    whole = p.fl.vload(v, ptr, index) if step == 1 else None
    if whole is not None:
        p.define(result, whole)
        return
    lanes = [f"{ptr}[{p.address(memref, indices, i * step)[1]}]" for i in range(v.lanes)]
    if v.elem.is_bool:
        lanes = [f"({lane} != 0)" for lane in lanes]
    p.define(result, p.construct(v, lanes))


@_handles("vector.store")
def _vector_store(p: _FunctionPrinter, op: Operation) -> None:
    value, memref, *indices = op.operands
    v = _vec_of(p, value)
    ptr, index = p.address(memref, indices)
    x = p.expr(value)
    step = _lane_step(memref)
    whole = p.fl.vstore(v, x, ptr, index) if step == 1 else None
    if whole is not None:
        p.line(whole)
        return
    for i in range(v.lanes):
        lane = p.lane_get(x, v, i)
        if v.elem.is_bool:
            lane = f"({p.fl.mem_ctype(v.elem)}){lane}"
        p.line(f"{ptr}[{p.address(memref, indices, i * step)[1]}] = {lane};")


@_handles("vector.broadcast")
def _broadcast(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    v = _vec_of(p, result)
    w = p.vec(source.type)
    x = p.expr(source)
    if w is not None and w.lanes == v.lanes:
        p.names[result] = x
        return
    if w is not None:
        if w.lanes != 1:
            raise _Unsupported(f"broadcast of {source.type} to {result.type}")
        x = p.lane_get(x, w, 0)
    if v.storage == 1:
        p.define(result, x)
    else:
        p.define(result, p.fl.splat(v, p.lane_put(x, v)))


@_handles("vector.shuffle")
def _shuffle(p: _FunctionPrinter, op: Operation) -> None:
    """Lanes picked from two vectors by a static mask (index < lanes of the first: from it,
    else from the second), built lane by lane: both C flavours and every width."""
    a, b = op.operands
    result = op.results[0]
    v, va, vb = _vec_of(p, result), _vec_of(p, a), _vec_of(p, b)
    xa, xb = p.expr(a), p.expr(b)
    mask = op.mask.get_values()  # type: ignore[attr-defined]
    lanes = [
        p.lane_put(p.lane_get(xa, va, m) if m < va.lanes else p.lane_get(xb, vb, m - va.lanes), v)
        for m in mask
    ]
    p.define(result, p.construct(v, lanes))


@_handles("vector.fma", "math.fma")
def _fma(p: _FunctionPrinter, op: Operation) -> None:
    result = op.results[0]
    e = p.scalar_of(result.type)
    xs = [p.expr(x) for x in op.operands]
    v = p.vec(result.type)
    if v is None or v.storage == 1:
        p.define(result, p.fl.fma(e, False, *xs) or "")
        return
    whole = p.fl.fma(e, True, *xs)
    if whole is not None:
        p.define(result, whole)
        return
    lanes = [p.fl.fma(e, False, *(p.lane_get(x, v, i) for x in xs)) or "" for i in range(v.lanes)]
    p.define(result, p.construct(v, lanes))


def _position(op: Operation) -> int:
    if len(op.operands) > (2 if op.name == "vector.insert" else 1):
        raise _Unsupported("only static positions are printed")
    position = op.properties.get("static_position")
    values = list(position.get_values()) if isinstance(position, DenseArrayBase) else []
    if len(values) != 1:
        raise _Unsupported("only a single lane of a rank-1 vector is addressed")
    return int(values[0])


@_handles("vector.extract")
def _extract(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    if isinstance(result.type, VectorType):
        raise _Unsupported("extracting a sub-vector is not printed")
    v = _vec_of(p, source)
    p.define(result, p.lane_get(p.expr(source), v, _position(op)))


@_handles("vector.insert")
def _insert(p: _FunctionPrinter, op: Operation) -> None:
    scalar, dest = op.operands[0], op.operands[1]
    if isinstance(scalar.type, VectorType):
        raise _Unsupported("inserting a sub-vector is not printed")
    v = _vec_of(p, dest)
    lane = _position(op)
    if v.storage == 1:
        p.define(op.results[0], p.expr(scalar))
        return
    name = p.define(op.results[0], p.expr(dest))
    p.line(f"{p.fl.lane(name, lane)} = {p.lane_put(p.expr(scalar), v)};")


_REDUCTIONS = {
    "add": "arith.addf",
    "mul": "arith.mulf",
    "minnumf": "arith.minnumf",
    "maxnumf": "arith.maxnumf",
    "minimumf": "arith.minimumf",
    "maximumf": "arith.maximumf",
}
_INT_REDUCTIONS = {
    "add": "arith.addi",
    "mul": "arith.muli",
    "minui": "arith.minui",
    "minsi": "arith.minsi",
    "maxui": "arith.maxui",
    "maxsi": "arith.maxsi",
    "and": "arith.andi",
    "or": "arith.ori",
    "xor": "arith.xori",
}


@_handles("vector.reduction")
def _reduction(p: _FunctionPrinter, op: Operation) -> None:
    source, result = op.operands[0], op.results[0]
    v = _vec_of(p, source)
    kind_attr = op.properties.get("kind")
    kind = str(getattr(getattr(kind_attr, "data", None), "value", ""))
    table = _REDUCTIONS if v.elem.is_float else _INT_REDUCTIONS
    if kind not in table:
        raise _Unsupported(f"reduction <{kind}> of {source.type}")
    combine = table[kind]
    x = p.expr(source)
    lanes = [p.lane_get(x, v, i) for i in range(v.lanes)]
    if len(op.operands) > 1:
        lanes.insert(0, p.expr(op.operands[1]))
    name = p.define(result, lanes[0])
    for lane in lanes[1:]:
        text = p.scalar(combine, [name, lane], [v.elem, v.elem], v.elem)
        p.line(f"{name} = {text};")


# -- public API ----------------------------------------------------------------------------------


def prelude(flavour: str, uses_f64: bool = False) -> str:
    """The helpers every printed program starts with (guarded: texts may be concatenated)."""
    return _flavour(flavour).prelude(uses_f64)


def print_function(fn: Operation, flavour: str, kernel: bool = True) -> str:
    """One gpu.func or loop-level func.func (memref arguments, no results) as a C program: the
    prelude, then the function as a kernel (the parameter convention) or, with kernel=False, as
    a device function taking one plain pointer per memref."""
    fl = _flavour(flavour)
    printer = _FunctionPrinter(fn, fl, kernel)
    text = printer.print()
    return fl.prelude(printer.uses_f64) + "\n" + text


def print_module(module: Operation, flavour: str) -> str:
    """Every gpu.func of a gpu.module as a kernel, after the flavour's prelude."""
    fl = _flavour(flavour)
    if not isinstance(module, gpu.ModuleOp):
        raise PrintError(f"print_module takes a gpu.module, not '{module.name}'")
    module_name = module.sym_name.data
    texts, uses_f64 = [], False
    for op in module.body.block.ops:
        if isinstance(op, gpu.FuncOp):
            printer = _FunctionPrinter(op, fl, kernel=True)
            texts.append(printer.print())
            uses_f64 |= printer.uses_f64
        elif op.name != "memref.global":
            raise PrintError(
                f"{fl.name}: cannot print '{op.name}' in gpu.module @{module_name}: only "
                "gpu.func kernels and workgroup memref.globals are printed"
            )
    return fl.prelude(uses_f64) + "\n" + "\n".join(texts)
