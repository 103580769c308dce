"""An `onnx.backend.base.Backend` over ziggurat's compiled machine code, and the one list of
ONNX node tests it does not run (with the reason for each).

`ZigguratBackend.prepare` compiles a model with `compile_model` (graph -> linalg -> loops -> LLVM
-> machine code); `run` feeds the graph inputs in order and returns the outputs in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from compiler.model import CompiledModel, compile_model


class ZigguratRep(BackendRep):
    def __init__(self, compiled: CompiledModel):
        self.compiled = compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            feeds = dict(zip(self.compiled.input_names, inputs, strict=True))
        outs = self.compiled.run(feeds)
        return tuple(outs[n] for n in self.compiled.output_names)


class ZigguratBackend(Backend):
    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> ZigguratRep:
        super().prepare(model, device, **kwargs)  # checks the model
        return ZigguratRep(compile_model(model))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)


# The node-test families of the supported operators (regexes over the loader's test names).
FAMILIES: Sequence[str] = (
    r"test_(basic_)?conv_", r"test_gemm_", r"test_matmul_", r"test_add", r"test_sub",
    r"test_mul", r"test_div", r"test_pow", r"test_sqrt", r"test_exp", r"test_log_",
    r"test_log_example", r"test_neg", r"test_abs", r"test_reciprocal", r"test_relu",
    r"test_leakyrelu", r"test_sigmoid", r"test_tanh", r"test_erf", r"test_gelu_",
    r"test_hardsigmoid", r"test_hardswish", r"test_clip", r"test_softmax_",
    r"test_logsoftmax_", r"test_layer_normalization_", r"test_batchnorm_", r"test_maxpool_",
    r"test_averagepool_", r"test_globalaveragepool", r"test_globalmaxpool", r"test_reshape_",
    r"test_flatten_", r"test_transpose_", r"test_concat_", r"test_split_", r"test_slice",
    r"test_squeeze", r"test_unsqueeze_", r"test_gather_", r"test_(constant|edge|reflect|wrap)_pad",
    r"test_reduce_mean_", r"test_reduce_sum_", r"test_reduce_max_", r"test_constant_cpu",
    r"test_constantofshape_", r"test_shape", r"test_identity", r"test_(training_)?dropout",
    r"test_cast_",
)

_NOT_F32 = "non-float32 tensors: ziggurat compiles float32 models only (inputs and outputs)"

# Every node test of the families above that is not run: test-name regex -> reason.
EXCLUDED: dict[str, str] = {
    # -- element types
    r"test_(add|sub|mul|div)_u?int\d+": _NOT_F32,
    r"test_div_int32_trunc": _NOT_F32,
    r"test_pow_types_": _NOT_F32,
    r"test_clip_default_int8_": _NOT_F32,
    r"test_maxpool_2d_uint8": _NOT_F32,
    r"test_reduce_max_bool_inputs|test_reduce_max_empty_set_bool": _NOT_F32,
    r"test_cast_": _NOT_F32 + " (every Cast node test has a non-float32 side)",
    r"test_shape": "int64 output: Shape is folded at import and outputs are float32 only",
    r"test_constantofshape_int_": _NOT_F32,
    r"test_dropout_default_mask|test_training_dropout\w*mask": "bool mask output: " + _NOT_F32,
    # -- operators of other names caught by a family regex
    r"test_gather_elements_": "GatherElements is not a supported operator",
    r"test_reduce_sum_square_": "ReduceSumSquare is not a supported operator",
    r"test_split_to_sequence_": "SplitToSequence (sequence outputs) is not supported",
    r"test_identity_sequence|test_identity_opt": "sequence/optional types are not supported",
    r"test_(edge|reflect|wrap)_pad": "Pad modes other than 'constant' are not supported",
    # -- unsupported attributes / outputs
    r"test_(max|average)pool_1d_": "1-D pooling unsupported (2-D NCHW only)",
    r"test_(max|average)pool_3d_": "3-D pooling unsupported (2-D NCHW only)",
    r"test_maxpool_with_argmax_": "MaxPool Indices output not produced",
    r"test_averagepool_2d_dilations": "dilated AveragePool unsupported",
    r"test_batchnorm_\w*training_mode": "BatchNormalization training_mode=1 unsupported "
                                        "(inference only)",
    r"test_training_dropout": "Dropout training_mode=1 (random mask) unsupported",
    r"test_reduce_\w+_empty_set": "zero-size tensors unsupported",
    r"test_split_zero_size_splits_": "zero-size tensors unsupported",
}
