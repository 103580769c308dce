"""`ziggurat generate`: greedy decoding from token ids with a KV-cache decoder
(compiler/generate.py: two compiled programs, a cache of fixed capacity; the prompt's capacity
is its length rounded up to a power of two, so prompts of nearby lengths reuse the programs
the compile cache holds). `--one-compile`: one program for every size, the past growing one
slot per token (compiler/generate_growing.py)."""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from compiler.cli.common import UsageError, check_threads, model_arg, progress_on_terminal


def _token_ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise UsageError(f"--prompt must be token ids separated by commas, got {text!r}") from None
    if not ids or min(ids) < 0:
        raise UsageError(f"--prompt must be one or more non-negative token ids, got {text!r}")
    return ids


def cmd_generate(args: argparse.Namespace) -> int:

    from compiler.generate import GreedyGenerator, prompt_bucket

    prompt = _token_ids(args.prompt)
    check_threads(args.threads)
    if args.new_tokens < 1:
        raise UsageError(f"--new-tokens must be at least 1 (got {args.new_tokens})")
    if args.one_compile:
        from compiler.generate_growing import GrowingGenerator

        with progress_on_terminal():
            growing = GrowingGenerator(
                model_arg(args.model), threads=args.threads, cache=not args.no_cache
            )
        tokens = growing.generate([prompt], args.new_tokens)
        _report(tokens, len(prompt), growing.prefill_seconds, growing.step_seconds, "past grows")
        return 0
    with progress_on_terminal():
        generator = GreedyGenerator(
            model_arg(args.model),
            prompt_len=prompt_bucket(len(prompt)),  # one pair of programs per bucket
            new_tokens=args.new_tokens,
            threads=args.threads,
            cache=not args.no_cache,
        )
    tokens = generator.generate([prompt])
    _report(
        tokens,
        len(prompt),
        generator.prefill_seconds,
        generator.step_seconds,
        f"cache capacity {generator.capacity}",
    )
    return 0


def _report(tokens: Any, prompt_len: int, prefill: float, steps: list[float], cache: str) -> None:
    """The tokens on stdout, the latencies on stderr."""
    print(" ".join(str(int(t)) for t in tokens[0]))
    per_token = f", {statistics.median(steps) * 1e3:.2f} ms per token (median)" if steps else ""
    print(
        f"prefill of {prompt_len} tokens {prefill * 1e3:.2f} ms{per_token}; {cache}",
        file=sys.stderr,
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    g = subparsers.add_parser(
        "generate",
        help="greedy decoding with a KV-cache decoder (optimum's layout: input_ids, "
        "attention_mask, past_key_values.* -> logits, present.*)",
    )
    g.add_argument("model", help="an .onnx decoder exported with a KV cache")
    g.add_argument("--prompt", required=True, help="the prompt's token ids, e.g. 464,2068,318")
    g.add_argument("--new-tokens", type=int, default=32, help="tokens to generate (default 32)")
    g.add_argument("--threads", type=int, default=1, help="threads for the kernels (default 1)")
    g.add_argument(
        "--one-compile",
        action="store_true",
        help="one program for every size, the past growing one slot per token (the model's "
        "operators must all take run-time sizes), instead of two over a fixed-capacity cache",
    )
    g.add_argument(
        "--no-cache",
        action="store_true",
        help="compile afresh, neither reading nor filling the compile cache",
    )
    g.set_defaults(fn=cmd_generate)
