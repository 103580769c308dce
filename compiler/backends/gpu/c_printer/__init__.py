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

from compiler.backends.gpu.c_printer.errors import PrintError
from compiler.backends.gpu.c_printer.flavour import FLAVOURS
from compiler.backends.gpu.c_printer.program import prelude, print_function, print_module

__all__ = ["FLAVOURS", "PrintError", "prelude", "print_function", "print_module"]
