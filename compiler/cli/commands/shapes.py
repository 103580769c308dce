"""`ziggurat shapes`: what sizes a model runs at, before anything is compiled: each symbol of
its inputs with its bounds (the --dim given, narrowed by the model's own, each with the reason
the model sets it) and every input's and output's shape over the symbols
(compiler/frontend/symbolic_shapes.py); and whether compile_symbolic compiles it once for every
size or once per size (and why)."""

from __future__ import annotations

import argparse

from compiler.cli.commands.options import add_input_shape
from compiler.cli.common import model_arg, parse_dims, parse_input_shapes


def _spelled(dims) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def cmd_shapes(args: argparse.Namespace) -> int:
    from compiler.symbolic_model import SymbolicModel

    model = SymbolicModel(
        model_arg(args.model), parse_dims(args.dim), parse_input_shapes(args.input_shape)
    )
    shapes = model.shapes
    print("symbols:" if model.symbols else "symbols: none (every shape is static)")
    for symbol, bound in model.bounds.items():
        if model.derived(symbol):  # past + seq: checked against its parts
            continue
        why = model.bound_reasons.get(symbol)
        print(f"  {symbol} in {bound}" + (f"  (the model's bound: {why})" if why else ""))
    for lim in shapes.limits:
        if len(lim.expression.symbols) > 1:
            print(f"  {lim.expression} <= {lim.bound}  ({lim.reason})")
    if shapes.input_limits:
        print("input values:")
        for values in shapes.input_limits:
            print(f"  {values.name} in [-{values.extent}, {values.extent})  ({values.reason})")
    for title, names in (("inputs:", model.input_names), ("outputs:", model.output_names)):
        print(title)
        for name in names:
            dims = shapes.shape(name)
            print(f"  {name} {'?' if dims is None else _spelled(dims)}")
    if model.symbols:
        refusal = model.run_time_refusal()
        print(
            "compiled: once for every size"
            if refusal is None
            else f"compiled: once per size ({refusal})"
        )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser(
        "shapes",
        help="the sizes a model runs at: its symbols' bounds (yours and the model's own) and "
        "its inputs' and outputs' shapes over them; nothing is compiled",
    )
    s.add_argument("model", help="an .onnx file or zoo:NAME")
    add_input_shape(s)
    s.set_defaults(fn=cmd_shapes)
