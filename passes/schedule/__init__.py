"""Everything ziggurat knows about a kernel's `#sched.schedule`, in one place.

The schedule passes (passes/transforms/: default-schedule, tile, interchange, unroll-jam,
vectorize, pack, parallelize), the lowering (convert-linalg-to-loops) and the tuner
(autotune/space.py) all reason about the same value, so its rules live here once:

    target.py    what the machine and the runtime offer: host vector width, thread limit
    rules.py     legality of a Schedule on a KernelInfo (vector loop, register tile, panels,
                 threads) and the clamping of sizes past a loop's extent
    default.py   the analytic default schedule and its threaded variant
    options.py   range checks of the schedule passes' options, with one error format
    attached.py  the schedule attached to a kernel (or the default), and the rewrite of the
                 schedules of the kernels a pass targets
    knobs.py     one edit per knob: the schedule with that knob set, checked on the kernel
    space.py     the candidates of each knob that the tuner searches

The modules import each other downwards only, in the order of the list above (target first,
space last), so there is no cycle and each can be read and tested on its own.
Nothing here imports the passes themselves: they sit above this package, as do the lowering
and the tuner.
"""
