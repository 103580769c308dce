"""`convert-linalg-to-loops`: materialize each scheduled linalg kernel on memrefs as one loop nest.

The `#sched.schedule` of a kernel (passes/schedule/default.py computes one when it has none)
decides the nest:

    tile loops (cache level, in `order`; partial last tiles peeled statically)
      point loops over parallel dims (step = register tile; remainders peeled statically)
        register tile: one accumulator per (position, vector chunk), loaded once
          reduction loops (scf.for with the accumulators as iter_args, unrolled by `unroll`)
            the body, replicated per register-tile position, on vector<W x f32> values
        accumulators stored once

so for matmul- and conv-like kernels the inner loop is a broadcast-load-FMA sequence on
registers, which is what fast CPU code looks like (DESIGN.md). Every shape is static, so peeling
produces static trip counts and no masks.

Modules, outermost concept first:

    convert        the pass: fills to generics, fusion plan, schedule checks, one nest per kernel
    fusion         which initializer / elementwise consumers run inside a reduction's nest
    stages         the bodies one nest evaluates and their accesses in the kernel's loop space
    loop_nest      threads (scf.parallel), cache tiles, point loops
    packing        copying the box a cache tile reads into a contiguous stack panel
    register_tile  accumulators carried through the reduction loops, stored once
    body           a linalg body inlined on registers (vector ops, fma)
    operand_io     scalar / vector / gathered loads and stores of operands
    emitter        insertion point, reuse scopes, hoisted constants, index arithmetic, scf.for
"""

from passes.conversions.linalg_to_loops.convert import ConvertLinalgToLoopsPass, lower_kernel

__all__ = ["ConvertLinalgToLoopsPass", "lower_kernel"]
