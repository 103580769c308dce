"""The CPU back end: LLVM-dialect modules -> native code for the host, through llvmlite (MCJIT).

- `translate`: the llvm dialect (xDSL) -> llvmlite IR, with large constants bound to buffers.
- `jit`: everything after the IR, without xDSL: the host target machine, optimizing and
  emitting object code, loading IR and objects into an engine (thread-pool runtime included),
  calling functions with numpy arrays, and the memref element type <-> numpy dtype table.
- `compile`: the two together (`compile_module`, `compile_object`, `compile_to_llvm_ir`,
  `compile_to_asm`).

This file imports nothing, so that `jit` loads without xDSL (the tuner's runner process).
"""
