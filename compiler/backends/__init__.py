"""The back ends: `base` (the Backend seam and the Program protocol), `registry` (BACKENDS, every
target by name), `cpu` (LLVM through llvmlite, with `llvm_cpu`), `gpu` (OpenCL and CUDA)."""
