"""Handlers of structured control flow: scf.for as a C for loop, scf.if, and scf.yield as
assignments to the loop-carried or result locals."""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region

from compiler.backends.gpu.c_printer.errors import _Unsupported
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter, _handles


def _body_block(region: Region) -> Block:
    if len(region.blocks) != 1:
        raise _Unsupported("a region of one block is expected")
    return region.blocks[0]


def _nested(p: _FunctionPrinter, block: Block) -> None:
    p.depth += 1
    p.print_block(block)
    p.depth -= 1


@_handles("scf.for")
def _for(p: _FunctionPrinter, op: Operation) -> None:
    lb, ub, step, *inits = op.operands
    block = _body_block(op.regions[0])
    iv, *iter_args = block.args
    for init, arg, result in zip(inits, iter_args, op.results):
        name = p.fresh()
        p.line(f"{p.ctype(result.type)} {name} = {p.expr(init)};")
        p.names[arg] = p.names[result] = name
    i = p.fresh()
    p.names[iv] = i
    ctype = p.ctype(iv.type)
    p.line(f"for ({ctype} {i} = {p.expr(lb)}; {i} < {p.expr(ub)}; {i} += {p.expr(step)}) {{")
    _nested(p, block)
    p.line("}")


@_handles("scf.if")
def _if(p: _FunctionPrinter, op: Operation) -> None:
    for result in op.results:
        name = p.fresh()
        p.line(f"{p.ctype(result.type)} {name};")
        p.names[result] = name
    then_region, else_region = op.regions[0], op.regions[1]
    p.line(f"if ({p.expr(op.operands[0])}) {{")
    _nested(p, _body_block(then_region))
    if else_region.blocks and (op.results or list(else_region.blocks[0].ops)[:-1]):
        p.line("} else {")
        _nested(p, _body_block(else_region))
    p.line("}")


@_handles("scf.yield")
def _yield(p: _FunctionPrinter, op: Operation) -> None:
    parent = op.parent_op()
    if parent is None or parent.name not in ("scf.for", "scf.if"):
        raise _Unsupported("scf.yield outside scf.for / scf.if")
    types = {p.names[r]: r.type for r in parent.results}
    pairs = [(p.names[r], p.expr(x)) for r, x in zip(parent.results, op.operands)]
    pairs = [(t, x) for t, x in pairs if t != x]
    # a value that an earlier assignment overwrites (a swap): go through temporaries
    if any(x in {t for t, _ in pairs[:k]} for k, (_, x) in enumerate(pairs)):
        temps = []
        for t, x in pairs:
            temp = p.fresh()
            p.line(f"{p.ctype(types[t])} {temp} = {x};")
            temps.append((t, temp))
        pairs = temps
    for t, x in pairs:
        p.line(f"{t} = {x};")
