"""Whether a GPU API can run kernels on this machine, and if not why: asked before compiling
(the model API, the CLI) and before loading a package (the lean runtime), so it imports neither
xDSL nor ONNX; each runtime module answers for its API."""

from __future__ import annotations


def unavailable_reason(api: str) -> str | None:
    """None when `api` ("opencl" or "cuda") can run kernels on this machine, else why not (one
    line)."""
    if api == "cuda":
        from compiler.backends.gpu.cuda_runtime import cuda_available

        return cuda_available()
    from compiler.backends.gpu.opencl_runtime import opencl_available

    return opencl_available()
