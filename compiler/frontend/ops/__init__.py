"""The ONNX operator converters, one module per family; importing this package registers them
all in `compiler.frontend.importer.CONVERTERS`."""

from compiler.frontend.ops import (
    attention,
    cast,
    constants,
    control_flow,
    conv_pool,
    data_movement,
    elementwise,
    losses,
    matmul,
    normalization,
    ordering,
    quantization,
    recurrent,
    reductions,
    resize,
    sampling,
    scatter_gather,
    spectral,
)

__all__ = [
    "attention",
    "cast",
    "constants",
    "control_flow",
    "conv_pool",
    "data_movement",
    "elementwise",
    "losses",
    "matmul",
    "normalization",
    "ordering",
    "quantization",
    "recurrent",
    "reductions",
    "resize",
    "sampling",
    "scatter_gather",
    "spectral",
]
