"""The CUDA C++ flavour (nvcc, NVRTC): its scalar and vector types (structs of at most 4 lanes),
`f`-suffixed math for f32, the float2/3/4 operators and fma its prelude defines, and plain
pointer kernel parameters (the host applies the byte offset)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.c_types import _Elem, _Vec
from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.flavour import _C_KEYWORDS, _C_SCALARS, _Flavour
from compiler.backends.gpu.c_printer.op_tables import _FLOAT_OPERATORS, _op_name

_CUDA_RESERVED = frozenset(
    "__global__ __device__ __shared__ __constant__ __host__ threadIdx blockIdx blockDim gridDim "
    "warpSize class template typename namespace new delete operator this bool true false".split()
)


_CUDA_SCALARS = _C_SCALARS | {("i", 64): "long long", ("i", 8): "signed char"}
_CUDA_VECTOR_BASES = _CUDA_SCALARS | {("i", 64): "longlong", ("i", 8): "char"}
"""The vector types' base names (`longlong4`, `char4`): the scalar's but for those two."""
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
    scalars = _CUDA_SCALARS
    unsigned = _CUDA_UNSIGNED
    byte = "unsigned char"
    long_suffix = "LL"

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
