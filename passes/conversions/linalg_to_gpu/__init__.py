"""Scheduled linalg kernels -> gpu.module kernels with block/thread ids (convert-linalg-to-gpu)."""

from passes.conversions.linalg_to_gpu.convert import ConvertLinalgToGpuPass

__all__ = ["ConvertLinalgToGpuPass"]
