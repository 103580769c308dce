"""Export the model-zoo test set (tests/data/model_zoo/*.onnx + manifest.json). Run by hand.

    python tests/support/export_model_zoo.py            # every model
    python tests/support/export_model_zoo.py bert_ts17  # only these (the manifest is merged)

Needs PyTorch and friends, which are NOT dependencies of the project (the tests never import
torch; CI does not need it). Exported with:

    pip install torch==2.13.0+cpu torchvision==0.28.0 timm==1.0.31 transformers==5.24.0 \
        onnxscript==0.7.2

(the torchvision wheel is a CUDA build whose `_C` library cannot load with CPU torch; the models
are plain Python, so the two modules that register its C++ operators are stubbed out below).

Every model is built from its class with random weights: torchvision and timm architectures as
they are (fewer classes), Hugging Face transformers from a small config (2 layers, hidden 64,
vocabulary 1000); nothing is downloaded. Inputs are small (images 1x3x64x64, sequences of 16
tokens, batch 1) and every input shape is static. Each model is exported by the TorchScript
exporter (`torch.onnx.export(dynamo=False)`, file suffix `_ts<opset>`) and/or the dynamo
exporter (`dynamo=True`, suffix `_dynamo<opset>`), at opsets 13, 17, 18 or 20.

Weights are not checked in. Every float initializer with more than STRIP_ABOVE (64) elements
is replaced by a TensorProto with the same name, data type and dims, no data, and doc_string
STRIPPED_MARK; tests/support/model_zoo.py fills those with seeded random values on load.
Integer initializers (shapes, indices) and small float ones (scalars, per-channel parameters of
narrow layers) are kept as exported. Large float Constant nodes are first moved to initializers
so that they are stripped too, and the exporters' annotations (metadata_props and doc strings of
nodes and values: stack traces, FX nodes; most of a dynamo file) are dropped. Before export,
every 1-D float parameter and buffer is redrawn (norm scales and variances in [0.5, 1.5], shifts
and means in [-0.5, 0.5]), so that the small tensors kept in the files are not all ones and zeros.

manifest.json maps each model name (the file's stem) to: file, model (the base name), source
(torchvision, timm, transformers), arch (the constructor), config (transformers: the small
config), exporter (torchscript|dynamo), opset, inputs (name, dtype, shape, and for integer
inputs `range`: [low, high), values drawn in low..high-1; `symbolic_dims` if the exporter left
any, never so far), outputs (names) and stripped_initializers (a count).
"""

from __future__ import annotations

import io
import json
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

OUT_DIR = Path(__file__).resolve().parents[1] / "data" / "model_zoo"
STRIP_ABOVE = 64
STRIPPED_MARK = "ziggurat-model-zoo: stripped (random weights restored on load)"
SEQ = 16
VOCAB = 1000
IMAGE = [1, 3, 64, 64]

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


@dataclass
class Input:
    name: str
    dtype: str  # numpy dtype name
    shape: list[int]
    range: list[int] | None = None  # integer inputs: values in [low, high)


@dataclass
class Spec:
    name: str  # the model's base name; files are <name>_<exporter><opset>.onnx
    source: str
    arch: str
    build: Callable[[], Any]  # -> torch.nn.Module taking the inputs positionally
    inputs: list[Input]
    outputs: list[str]
    exports: list[tuple[str, int]] = field(default_factory=list)  # (ts|dynamo, opset)


def _import_torchvision():
    for mod in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
        sys.modules.setdefault(mod, types.ModuleType(mod))
    import torchvision

    return torchvision


def _image(name: str, source: str, arch: str, build, exports, outputs=("logits",)) -> Spec:
    return Spec(
        name, source, arch, build, [Input("input", "float32", IMAGE)], list(outputs), exports
    )


def _tokens(with_mask: bool) -> list[Input]:
    ins = [Input("input_ids", "int64", [1, SEQ], [0, VOCAB])]
    if with_mask:
        ins.append(Input("attention_mask", "int64", [1, SEQ], [0, 2]))
    return ins


def _hidden_state_only(model):
    """A module returning only the last hidden state of a transformers model."""
    import torch

    class Wrap(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            names = ["input_ids", "attention_mask"]
            out = self.inner(**dict(zip(names, args, strict=False)), return_dict=True)
            return out.last_hidden_state

    return Wrap(model)


def specs() -> list[Spec]:
    tv = _import_torchvision()
    m = tv.models

    def tvm(arch: str, **kw):
        return lambda: getattr(m, arch)(weights=None, num_classes=10, **kw)

    def timm_model(arch: str, fused_attn: bool = True, **kw):
        def build():
            import timm
            from timm.layers import config

            before = config.use_fused_attn()
            config.set_fused_attn(fused_attn)  # False: matmul + softmax (no SDPA at opset 13)
            try:
                return timm.create_model(arch, pretrained=False, num_classes=10, **kw)
            finally:
                config.set_fused_attn(before)

        return build

    def small_vit():
        from torchvision.models.vision_transformer import VisionTransformer

        return VisionTransformer(
            image_size=64,
            patch_size=16,
            num_layers=2,
            num_heads=2,
            hidden_dim=64,
            mlp_dim=128,
            num_classes=10,
        )

    def lraspp():
        seg = m.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=4
        )
        import torch

        class Out(torch.nn.Module):  # the model returns {"out": ...}
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]

        return Out(seg)

    def hf(kind: str):
        def build():
            import transformers as t

            common = dict(vocab_size=VOCAB)
            if kind == "bert":
                cfg = t.BertConfig(
                    **common,
                    hidden_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    intermediate_size=128,
                    max_position_embeddings=64,
                )
                return _hidden_state_only(t.BertModel(cfg, add_pooling_layer=False))
            if kind == "gpt2":
                cfg = t.GPT2Config(
                    **common,
                    n_embd=64,
                    n_layer=2,
                    n_head=2,
                    n_positions=64,
                    use_cache=False,
                    attn_implementation="eager",  # the TorchScript exporter at opset 13 has no SDPA
                )
                return _hidden_state_only(t.GPT2Model(cfg))
            if kind == "distilbert":
                cfg = t.DistilBertConfig(
                    **common,
                    dim=64,
                    n_layers=2,
                    n_heads=2,
                    hidden_dim=128,
                    max_position_embeddings=64,
                )
                return _hidden_state_only(t.DistilBertModel(cfg))
            if kind == "t5":
                cfg = t.T5Config(
                    **common,
                    d_model=64,
                    d_kv=32,
                    d_ff=128,
                    num_layers=2,
                    num_heads=2,
                    use_cache=False,
                )
                return _hidden_state_only(t.T5EncoderModel(cfg))
            if kind == "bart":
                cfg = t.BartConfig(
                    **common,
                    d_model=64,
                    encoder_layers=2,
                    decoder_layers=2,
                    encoder_attention_heads=2,
                    decoder_attention_heads=2,
                    encoder_ffn_dim=128,
                    decoder_ffn_dim=128,
                    max_position_embeddings=64,
                    use_cache=False,
                    attn_implementation="eager",  # the TorchScript exporter at opset 13 has no SDPA
                )
                return _hidden_state_only(t.BartModel(cfg).get_encoder())
            if kind == "whisper":
                cfg = t.WhisperConfig(
                    **common,
                    d_model=64,
                    encoder_layers=2,
                    decoder_layers=2,
                    encoder_attention_heads=2,
                    decoder_attention_heads=2,
                    encoder_ffn_dim=128,
                    decoder_ffn_dim=128,
                    num_mel_bins=80,
                    max_source_positions=32,
                    max_target_positions=32,
                    use_cache=False,
                    pad_token_id=0,
                    bos_token_id=1,
                    eos_token_id=2,
                    decoder_start_token_id=1,
                )
                enc = t.WhisperModel(cfg).get_encoder()
                import torch

                class Enc(torch.nn.Module):
                    def __init__(self, inner):
                        super().__init__()
                        self.inner = inner

                    def forward(self, input_features):
                        return self.inner(input_features, return_dict=True).last_hidden_state

                return Enc(enc)
            raise ValueError(kind)

        return build

    TS13, TS17, D18, D20 = ("ts", 13), ("ts", 17), ("dynamo", 18), ("dynamo", 20)
    hidden = ["last_hidden_state"]
    return [
        _image("resnet18", "torchvision", "resnet18", tvm("resnet18"), [TS13, D18]),
        _image("mobilenet_v2", "torchvision", "mobilenet_v2", tvm("mobilenet_v2"), [TS17, D18]),
        _image(
            "mobilenet_v3_small",
            "torchvision",
            "mobilenet_v3_small",
            tvm("mobilenet_v3_small"),
            [TS13],
        ),
        _image("efficientnet_b0", "torchvision", "efficientnet_b0", tvm("efficientnet_b0"), [D18]),
        _image("squeezenet1_1", "torchvision", "squeezenet1_1", tvm("squeezenet1_1"), [TS13, D20]),
        _image(
            "shufflenet_v2_x0_5",
            "torchvision",
            "shufflenet_v2_x0_5",
            tvm("shufflenet_v2_x0_5"),
            [TS17],
        ),
        _image("densenet121", "torchvision", "densenet121", tvm("densenet121"), [TS13]),
        _image("regnet_y_400mf", "torchvision", "regnet_y_400mf", tvm("regnet_y_400mf"), [D18]),
        _image("mnasnet0_5", "torchvision", "mnasnet0_5", tvm("mnasnet0_5"), [TS17]),
        _image(
            "googlenet",
            "torchvision",
            "googlenet",
            tvm("googlenet", aux_logits=False, init_weights=True),
            [TS13],
        ),
        _image("convnext_tiny", "torchvision", "convnext_tiny", tvm("convnext_tiny"), [D18]),
        _image(
            "vit_small",
            "torchvision",
            "VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, "
            "hidden_dim=64, mlp_dim=128)",
            small_vit,
            [TS17, D18],
        ),
        _image(
            "lraspp_mobilenet_v3_large",
            "torchvision",
            "segmentation.lraspp_mobilenet_v3_large(num_classes=4)",
            lraspp,
            [TS17],
            outputs=("out",),
        ),
        _image("timm_mobilevit_xxs", "timm", "mobilevit_xxs", timm_model("mobilevit_xxs"), [D18]),
        _image(
            "timm_deit_tiny",
            "timm",
            "deit_tiny_patch16_224(img_size=64, depth=2)",
            timm_model("deit_tiny_patch16_224", fused_attn=False, img_size=64, depth=2),
            [TS13],
        ),
        _image(
            "timm_efficientformerv2_s0",
            "timm",
            "efficientformerv2_s0(img_size=64)",
            timm_model("efficientformerv2_s0", img_size=64),
            [D18],
        ),
        Spec("bert", "transformers", "BertModel", hf("bert"), _tokens(True), hidden, [TS17, D18]),
        Spec("gpt2", "transformers", "GPT2Model", hf("gpt2"), _tokens(True), hidden, [TS13, D18]),
        Spec(
            "distilbert",
            "transformers",
            "DistilBertModel",
            hf("distilbert"),
            _tokens(True),
            hidden,
            [TS17],
        ),
        Spec(
            "t5_encoder",
            "transformers",
            "T5EncoderModel",
            hf("t5"),
            _tokens(True),
            hidden,
            [D18],
        ),
        Spec(
            "bart_encoder",
            "transformers",
            "BartModel.get_encoder()",
            hf("bart"),
            _tokens(True),
            hidden,
            [TS13],
        ),
        Spec(
            "whisper_encoder",
            "transformers",
            "WhisperModel.get_encoder()",
            hf("whisper"),
            [Input("input_features", "float32", [1, 80, 64])],
            hidden,
            [TS17, D18],
        ),
    ]


CONFIG_NOTE = {
    "bert": "hidden 64, 2 layers, 2 heads, ffn 128, vocab 1000, 64 positions, no pooler",
    "gpt2": "n_embd 64, 2 layers, 2 heads, vocab 1000, 64 positions, no cache",
    "distilbert": "dim 64, 2 layers, 2 heads, ffn 128, vocab 1000, 64 positions",
    "t5_encoder": "d_model 64, d_kv 32, ffn 128, 2 layers, 2 heads, vocab 1000",
    "bart_encoder": "d_model 64, 2 layers, 2 heads, ffn 128, vocab 1000, 64 positions",
    "whisper_encoder": "d_model 64, 2 layers, 2 heads, ffn 128, 80 mel bins, 32 positions "
    "(input 80x64 frames)",
}


def _randomize(model, seed: int) -> None:
    """Redraw every 1-D float parameter and buffer (norm scales, variances, shifts, biases)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point() or t.dim() != 1:
                continue
            u = torch.rand(t.shape, generator=g, dtype=t.dtype)
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("running_var", "weight", "gamma") or "scale" in leaf:
                t.copy_(0.5 + u)  # positive: variances; scales near 1
            else:
                t.copy_(u - 0.5)


def _example(inputs: list[Input], seed: int):
    import torch

    rng = np.random.default_rng(seed)
    out = []
    for i in inputs:
        if i.range is None:
            out.append(torch.from_numpy(rng.standard_normal(i.shape).astype(i.dtype)))
        else:
            a = rng.integers(i.range[0], i.range[1], i.shape).astype(i.dtype)
            if "mask" in i.name:
                a[..., 0] = 1
            out.append(torch.from_numpy(a))
    return tuple(out)


def export(spec: Spec, exporter: str, opset: int) -> onnx.ModelProto:
    import torch

    torch.manual_seed(0)
    model = spec.build().eval()
    _randomize(model, 0)
    args = _example(spec.inputs, 0)
    names = [i.name for i in spec.inputs]
    if exporter == "ts":  # with gradients on: nn.MultiheadAttention's fast path does not export
        buf = io.BytesIO()
        torch.onnx.export(
            model,
            args,
            buf,
            dynamo=False,
            opset_version=opset,
            input_names=names,
            output_names=spec.outputs,
            do_constant_folding=True,
        )
        proto = onnx.load_from_string(buf.getvalue())
    else:
        with torch.no_grad():
            prog = torch.onnx.export(
                model,
                args,
                dynamo=True,
                opset_version=opset,
                input_names=names,
                output_names=spec.outputs,
                external_data=False,
            )
            assert prog is not None
            proto = prog.model_proto
    return proto


def _drop_metadata(g: onnx.GraphProto) -> None:
    """Exporter annotations (stack traces, FX nodes, name scopes): most of a dynamo file."""
    for vi in [*g.input, *g.output, *g.value_info, *g.initializer]:
        vi.ClearField("metadata_props")
    for node in g.node:
        node.ClearField("metadata_props")
        node.doc_string = ""
        for a in node.attribute:
            for sub in [a.g, *a.graphs]:
                _drop_metadata(sub)


def strip(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """Large float Constant nodes to initializers, then every float initializer with more than
    STRIP_ABOVE elements to a data-less TensorProto marked STRIPPED_MARK. Returns the count."""
    g = model.graph
    _drop_metadata(g)
    for f in model.functions:
        for node in f.node:
            node.ClearField("metadata_props")
            node.doc_string = ""
    keep = []
    for node in g.node:
        if node.op_type == "Constant" and len(node.attribute) == 1:
            a = node.attribute[0]
            if (
                a.name == "value"
                and a.t.data_type in FLOAT_TYPES
                and int(np.prod(a.t.dims)) > STRIP_ABOVE
            ):
                t = TensorProto()
                t.CopyFrom(a.t)
                t.name = node.output[0]
                g.initializer.append(t)
                continue
        keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    count = 0
    for init in g.initializer:
        if init.data_type not in FLOAT_TYPES or int(np.prod(init.dims)) <= STRIP_ABOVE:
            continue
        if init.data_location == TensorProto.EXTERNAL:
            raise ValueError(f"{init.name}: external data")
        bare = TensorProto(name=init.name, data_type=init.data_type, dims=list(init.dims))
        bare.doc_string = STRIPPED_MARK
        init.CopyFrom(bare)
        count += 1
    return model, count


def _value_infos(model: onnx.ModelProto) -> list[dict[str, Any]]:
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [
            d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim
        ]
        out.append({"name": vi.name, "dims": dims})
    return out


def main(argv: list[str]) -> None:
    tv = _import_torchvision()  # before timm, which imports torchvision
    import timm
    import torch
    import transformers

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT_DIR / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    models = manifest.setdefault("models", {})
    manifest["exported_with"] = {
        "torch": torch.__version__,
        "torchvision": tv.__version__,
        "timm": timm.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
    }
    manifest["stripped_mark"] = STRIPPED_MARK
    manifest["strip_above"] = STRIP_ABOVE
    wanted = set(argv)
    for spec in specs():
        for exporter, opset in spec.exports:
            key = f"{spec.name}_{exporter}{opset}"
            if wanted and key not in wanted and spec.name not in wanted:
                continue
            print(f"{key}: exporting", flush=True)
            try:
                proto = export(spec, exporter, opset)
            except Exception as e:  # report and go on with the others
                print(f"{key}: FAILED {type(e).__name__}: {str(e).splitlines()[0][:300]}")
                continue
            proto, n = strip(proto)
            infos = _value_infos(proto)
            by_name = {i.name: i for i in spec.inputs}
            inputs = []
            for vi in infos:
                i = by_name[vi["name"]]
                entry: dict[str, Any] = {"name": i.name, "dtype": i.dtype, "shape": i.shape}
                if i.range is not None:
                    entry["range"] = i.range
                if any(not isinstance(d, int) or d == 0 for d in vi["dims"]):
                    entry["symbolic_dims"] = vi["dims"]
                inputs.append(entry)
            path = OUT_DIR / f"{key}.onnx"
            onnx.save(proto, path)
            models[key] = {
                "file": path.name,
                "model": spec.name,
                "source": spec.source,
                "arch": spec.arch,
                **({"config": CONFIG_NOTE[spec.name]} if spec.name in CONFIG_NOTE else {}),
                "exporter": "torchscript" if exporter == "ts" else "dynamo",
                "opset": opset,
                "inputs": inputs,
                "outputs": [o.name for o in proto.graph.output],
                "stripped_initializers": n,
            }
            print(f"{key}: {path.stat().st_size} bytes, {n} initializers stripped", flush=True)
    manifest["models"] = dict(sorted(models.items()))
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
