"""`ziggurat generate`: the tokens of compiler/generate.py from the command line, the same as
onnxruntime's greedy loop; bad prompts are one error line."""

from __future__ import annotations

import numpy as np
import onnx

from tests.support import transformer_models as tm
from tests.support.cli import run_ziggurat


def test_generate_prints_onnxruntime_tokens(tmp_path) -> None:
    cfg = tm.with_cache(tm.SMALL["qwen2"])
    model = tm.build(cfg)
    path = tmp_path / "qwen2.onnx"
    onnx.save(model, path)
    prompt = [5, 17, 923, 4]
    expected = tm.onnxruntime_greedy(model, cfg, np.array([prompt]), 12)[0]
    r = run_ziggurat(
        "generate", str(path), "--prompt", ",".join(map(str, prompt)), "--new-tokens", "12"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(t) for t in expected]
    assert "ms per token" in r.stderr


def test_one_compile_generation_prints_the_same_tokens(tmp_path) -> None:
    cfg = tm.with_cache(tm.SMALL["gpt2"])
    model = tm.build(cfg)
    path = tmp_path / "gpt2.onnx"
    onnx.save(model, path)
    prompt = [5, 17, 923]
    expected = tm.onnxruntime_greedy(model, cfg, np.array([prompt]), 10)[0]
    r = run_ziggurat(
        "generate", str(path), "--prompt", "5,17,923", "--new-tokens", "10", "--one-compile"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(t) for t in expected]
    assert "past grows" in r.stderr


def test_bad_prompt_is_one_error_line(tmp_path) -> None:
    path = tmp_path / "gpt2.onnx"
    onnx.save(tm.build(tm.with_cache(tm.SMALL["gpt2"])), path)
    r = run_ziggurat("generate", str(path), "--prompt", "1,two")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "ziggurat: error: --prompt must be token ids separated by commas, got '1,two'"
    )


def test_model_without_cache_is_one_error_line(tmp_path) -> None:
    path = tmp_path / "gpt2.onnx"
    onnx.save(tm.build(tm.SMALL["gpt2"]), path)
    r = run_ziggurat("generate", str(path), "--prompt", "1,2")
    assert r.returncode == 1
    assert "no 'attention_mask' input" in r.stderr
    assert "Traceback" not in r.stderr
