"""Names of the discardable `ziggurat.*` attributes that passes leave on ops, functions and
modules for later passes, the backends and the user.

One place for every name, in the lowest layer, because producer and consumer often sit in
different layers (outline-kernels writes `private_args`; the loop lowering and the tuner read it).
"""

NAME_ATTR = "ziggurat.name"
"""On @main's argument and result attributes: the ONNX tensor name (inputs and outputs)."""
GROUP_ATTR = "ziggurat.group"
"""On tensor-level ops: the fused group they came from (one group becomes one kernel)."""
PRIVATE_ARGS_ATTR = "ziggurat.private_args"
"""On a kernel function: the arguments that only this kernel reads and writes (scratch)."""
MEMORY_PLAN_ATTR = "ziggurat.memory_plan"
"""On the module: bufferize's arena plan (total and peak intermediate bytes)."""
AUTOTUNE_STATS_ATTR = "ziggurat.autotune"
"""On the module: how many kernels the `autotune` pass scheduled from records."""
