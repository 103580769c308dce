"""Names of the discardable `ziggurat.*` attributes that passes leave on ops, functions and
modules for later passes, the backends and the user.

One place for every name, in the lowest layer, because producer and consumer often sit in
different layers (outline-kernels writes `private_args`; the loop lowering and the tuner read it).
"""

NAME_ATTR = "ziggurat.name"
"""On @main's argument and result attributes: the ONNX tensor name (inputs and outputs)."""
DTYPE_ATTR = "ziggurat.dtype"
"""On @main's argument and result attributes, where the model declares an element type that is
computed in a wider one (float16 in f32, int8/uint8/int16/uint16 in i32, uint32 in i64): the
declared type's numpy name. The caller passes and gets that type; the boundary converts."""
RUN_TIME_AXIS_ATTR = "ziggurat.run_time_axis"
"""On @main's result attributes, for an output whose extent along this axis depends on the
values (NonZero, Unique, NonMaxSuppression): its type is an upper bound, and the result marked
LENGTH_OF_ATTR with its name holds the valid length, to which the executable trims it."""
LENGTH_OF_ATTR = "ziggurat.length_of"
"""On @main's result attributes: this i64 scalar result is the run-time length of the named
output (see RUN_TIME_AXIS_ATTR); the caller does not see it."""
INDEX_CHECK_ATTR = "ziggurat.index_check"
"""On @main's result attributes: this [2] i64 result holds the greatest index and the greatest
complement (-1 - index) that a gather read at run time from indices the caller's inputs decide (a token
id into an embedding table); its value names the read ("Gather node 'X': an index of 'ids' into
axis 0 of 'wte'"). The executable refuses a run whose indices fall outside INDEX_EXTENT_ATTR
(the kernel clamps them: never a read out of bounds, but not the model's result either), as
onnxruntime does; the caller does not see it."""
INDEX_EXTENT_ATTR = "ziggurat.index_extent"
"""On an INDEX_CHECK_ATTR result: the extent E of the axis read; indices lie in [-E, E)."""
GROUP_ATTR = "ziggurat.group"
"""On tensor-level ops: the fused group they came from (one group becomes one kernel)."""
PRIVATE_ARGS_ATTR = "ziggurat.private_args"
"""On a kernel function: the arguments that only this kernel reads and writes (scratch)."""
MEMORY_PLAN_ATTR = "ziggurat.memory_plan"
"""On the module: bufferize's arena plan (total and peak intermediate bytes)."""
AUTOTUNE_STATS_ATTR = "ziggurat.autotune"
"""On the module: how many kernels the `autotune` pass scheduled from records."""
GPU_TARGET_ATTR = "ziggurat.gpu_target"
"""On a gpu-level module: the GPU target preset its kernels were scheduled for."""
WINOGRAD_ATTR = "ziggurat.winograd"
"""On the generics lowered from graph.winograd_input / winograd_output: "input" or "output",
so a profile or a tuning log names them (they are small matrix products otherwise)."""
ARENA_SLOT_ATTR = "ziggurat.arena_slot"
"""On @main's arena alloc and its dealloc (convert-memref-to-llvm): the slot that keeps the
arena between calls."""
RELEASE_ARENAS_FUNCTION = "ziggurat_release_arenas"
"""Not an attribute: the function compiled code exports to free the arenas its slots keep; the
loader (compiler/backends/llvm_cpu/jit.py, no xDSL) calls it before unloading the code."""
