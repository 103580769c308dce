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

Modules (the CPU's own; what it shares with the GPU lowering is passes/conversions/loop_codegen/:
fusion, stages, the tiled nest below the threads, the register tile, bodies, operand I/O):

    convert        the pass: fills to generics, fusion plan, schedule checks, one nest per kernel
    loop_nest      threads (scf.parallel) around loop_codegen's cache tiles and point loops
    packing        copying the box a cache tile reads into a contiguous stack panel
"""

from passes.conversions.linalg_to_loops.convert import ConvertLinalgToLoopsPass, lower_kernel

__all__ = ["ConvertLinalgToLoopsPass", "lower_kernel"]
