"""The flavour interface: what differs between the C dialects the printer writes (qualifiers,
vector types, math names, thread ids, barriers, workgroup buffers), as TVM's codegen_c leaves to
codegen_opencl / codegen_cuda. The shared op-by-op translation is in function_printer.py; the
two implementations are opencl.py and cuda.py."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from compiler.backends.gpu.c_printer.c_types import _Elem, _Vec

FLAVOURS = ("opencl", "cuda")
"""The C dialects the printer writes: OpenCL C 1.2 (pyopencl) and CUDA C++ (nvcc, NVRTC)."""


_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while main".split()
)


_C_SCALARS = {
    ("f", 32): "float",
    ("f", 64): "double",
    ("i", 32): "int",
    ("i", 16): "short",
    ("i", 1): "int",
    ("index", 32): "int",
}
"""The C types of the scalar elements, by (kind, bits), that OpenCL C and CUDA C spell alike:
each flavour adds its own 64- and 8-bit integers."""


class _Flavour:
    """What differs between the C dialects (the shared translation is in _FunctionPrinter)."""

    name = ""
    kernel_prefix = ""
    device_prefix = ""
    reserved: frozenset[str] = frozenset()
    barrier = ""
    i1_mask = False
    """Whether an i1 vector lane holds 0 / -1 (OpenCL's comparison masks) rather than 0 / 1."""
    scalars: dict[tuple[str, int], str] = {}
    """The C type of each scalar element, by (kind, bits)."""
    unsigned: dict[int, str] = {}
    """The unsigned C type of each integer width."""
    byte: str = ""
    """The one-byte C type an i1 is stored as in memory."""
    long_suffix = ""
    """The suffix of a 64-bit integer literal."""

    # types
    def ctype(self, e: _Elem) -> str:
        return self.scalars[(e.kind, e.bits)]

    def mem_ctype(self, e: _Elem) -> str:
        """The C type of a memref element (i1 is one byte)."""
        return self.byte if e.is_bool else self.ctype(e)

    def utype(self, e: _Elem) -> str:
        return self.unsigned[e.bits]

    def storage(self, lanes: int) -> int:
        """Lanes of the C vector type that holds `lanes` lanes."""
        raise NotImplementedError

    def vtype(self, v: _Vec) -> str:
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
