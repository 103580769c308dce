"""Loop code generation shared by the CPU and GPU lowerings of scheduled linalg kernels.

convert-linalg-to-loops (linalg_to_loops/) and convert-linalg-to-gpu (linalg_to_gpu/) are
siblings: both import this package and neither imports the other, as IREE's Codegen/Common
serves its LLVMCPU and LLVMGPU paths. A GPU kernel is the CPU nest with its outer loops mapped to
block and thread ids, so everything from fusion down to the register tile is one code here:

    fills          linalg.fill as the equivalent generic
    fusion         which initializer / elementwise consumers run inside a reduction's nest
    stages         the bodies one nest evaluates and their accesses in the kernel's loop space
    tiled_nest     cache tiles and point loops (the lowerings add threads / ids and panels)
    panels         reading a tile's operands from a dense copy (CPU packing, GPU staging)
    register_tile  accumulators carried through the reduction loops, stored once
    body           a linalg body inlined on registers (vector ops, fma)
    operand_io     scalar / vector / gathered loads and stores of operands
    emitter        insertion point, reuse scopes, hoisted constants, index arithmetic, scf.for
"""
