"""Not a unit test: writes issue 30's transformer set (GPT-2 small, a Llama- and a Qwen2-shaped
decoder, BERT-base; seeded random weights, tests/support/transformer_models.py) as .onnx files
with batch 1 and sequence SEQ fixed, for `ziggurat bench DIR`.

Run: python tests/bench/transformer_set.py OUT_DIR [--seq 128] [--small]  then  ziggurat bench OUT_DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support import transformer_models as tm  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--small", action="store_true", help="the test-sized configs")
    ap.add_argument("--only", nargs="*", default=None, help="kinds to write (default: all)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    configs = tm.SMALL if args.small else tm.FULL
    for kind, cfg in configs.items():
        if args.only and kind not in args.only:
            continue
        model = tm.specialized(tm.build(cfg), batch=1, seq=args.seq)
        onnx.save(model, args.out / f"{kind}.onnx")
        print(kind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
