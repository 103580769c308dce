"""The GPU back ends: gpu-level modules (passes/conversions/linalg_to_gpu) -> OpenCL C or CUDA C,
and the runtimes that run them behind the CPU's executable interface.

- `c_printer`: a gpu.module's kernels as OpenCL C or CUDA C (one printer, two flavours).
- `host_plan`: @main's buffers and launches, read once from the gpu-level IR into `plan`'s
  classes (no xDSL there: packages load plans; GpuArtifact, what a GPU backend emits).
- `backend`: the "opencl" and "cuda" backends of compiler/backends/registry.py.
- `device_program`: the `function("main")` interface both runtimes share with the CPU's.
- `opencl_runtime` / `cuda_runtime`: weights uploaded once, one device arena, numpy in and out.
- `cuda_check`: CUDA C compiled to PTX with nvcc (checks the source where no GPU is; the PTX of
  CUDA packages), PTX assembled by ptxas.
- `compile`: the above put together for the model API and the CLI.
"""
