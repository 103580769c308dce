"""The ONNX operator converters, one module per family; importing this package registers them
all in `compiler.frontend.importer.CONVERTERS`."""

from compiler.frontend.ops import (
    constants,
    conv_pool,
    data_movement,
    elementwise,
    matmul,
    normalization,
    quantization,
    reductions,
    resize,
    scatter_gather,
)

__all__ = [
    "constants",
    "conv_pool",
    "data_movement",
    "elementwise",
    "matmul",
    "normalization",
    "quantization",
    "reductions",
    "resize",
    "scatter_gather",
]
