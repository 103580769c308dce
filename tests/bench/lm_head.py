"""Not a unit test: writes GPT-2's LM head alone as an ONNX model (hidden states [1, SEQ, 768]
times the transposed tied embedding [50,257, 768], random weights), for `ziggurat bench FILE
--profile`: the product in panels and the transposes back to row order, without the layers.

Run: python tests/bench/lm_head.py OUT.onnx [--seq 128] [--vocab 50257]  then  ziggurat bench OUT.onnx --profile 5
"""

from __future__ import annotations

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--width", type=int, default=768)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    wte = (rng.standard_normal((args.vocab, args.width)) * 0.02).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Transpose", ["wte"], ["wte_t"], perm=[1, 0]),
            helper.make_node("MatMul", ["hidden", "wte_t"], ["logits"]),
        ],
        "lm_head",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, args.seq, args.width])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, args.seq, args.vocab])],
        [numpy_helper.from_array(wte, "wte")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
