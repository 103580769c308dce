"""The ONNX operator converters, one module per family; importing this package registers them
all in `compiler.frontend.importer.CONVERTERS`."""

from compiler.frontend.ops import (
    attention,
    cast,
    constants,
    conv_pool,
    data_movement,
    elementwise,
    losses,
    matmul,
    normalization,
    ordering,
    quantization,
    reductions,
    resize,
    scatter_gather,
)

__all__ = [
    "attention",
    "cast",
    "constants",
    "conv_pool",
    "data_movement",
    "elementwise",
    "losses",
    "matmul",
    "normalization",
    "ordering",
    "quantization",
    "reductions",
    "resize",
    "scatter_gather",
]
