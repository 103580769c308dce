"""The function printer: one gpu.func or func.func as C, value by value (fresh locals, pointers of
memrefs, addresses from layouts, lanes of vectors), its signature by the kernel parameter
convention, and the registry of op handlers (`_handles`) it dispatches each op to. The handlers
themselves live in ops/, one module per dialect family."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import func, gpu
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    SymbolRefAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import SymbolTable

from compiler.backends.gpu.c_printer.c_types import _Elem, _elem, _Vec
from compiler.backends.gpu.c_printer.errors import PrintError, _Unsupported
from compiler.backends.gpu.c_printer.flavour import _Flavour
from compiler.backends.gpu.c_printer.memref_layout import _extent, _layout, _memory_space
from compiler.backends.gpu.c_printer.op_tables import _op_name
from compiler.backends.gpu.c_printer.scalar_semantics import _ScalarSemantics
from compiler.registry import registrar

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCAL_NAME = re.compile(r"(v|arg)[0-9]+(_.*)?|zg_.*|ZG_.*")
"""Names the printer gives its own locals (and helpers): symbols may not take them."""


# -- the function printer ------------------------------------------------------------------------


@dataclass
class _Pointer:
    """A memref value in C: the pointer it is addressed from, and that pointer's address space."""

    name: str
    space: str


class _FunctionPrinter(_ScalarSemantics):
    """Prints one function (print() returns its text; `uses_f64` then says whether the program
    needs OpenCL's fp64 extension)."""

    def __init__(self, fn: Operation, flavour: _Flavour, kernel: bool):
        if not isinstance(fn, gpu.FuncOp | func.FuncOp):
            raise PrintError(f"print_function takes a gpu.func or func.func, not '{fn.name}'")
        self.fn: gpu.FuncOp | func.FuncOp = fn
        self.fl = flavour
        self.kernel = kernel
        self.fn_name = fn.sym_name.data
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.names: dict[SSAValue, str] = {}
        self.ints: dict[SSAValue, int] = {}  # values of integer constants (index folding)
        self.pointers: dict[SSAValue, _Pointer] = {}
        self.workgroup: dict[str, str] = {}  # symbol -> C array name
        self.uses_f64 = False

    # ---------------------------------------------------------------------------- driver
    def error(self, op: Operation, reason: str) -> PrintError:
        return PrintError(
            f"{self.fl.name}: cannot print '{_op_name(op)}' in function @{self.fn_name}: {reason}"
        )

    def print(self) -> str:
        fn = self.fn
        name = self.fn_name
        if (
            not _IDENTIFIER.fullmatch(name)
            or name in self.fl.reserved
            or name[:3] in ("zg_", "ZG_")
        ):
            raise self.error(
                fn,
                f"'{name}' is not a usable {self.fl.name} function name (not a C identifier, "
                "a keyword, or a name of the printer's helpers)",
            )
        ftype = fn.function_type
        if ftype.outputs.data:
            raise self.error(fn, "a kernel returns no results (it writes its memref arguments)")
        region = fn.body
        if len(region.blocks) != 1:
            raise self.error(
                fn,
                "a kernel body is one block (unstructured control flow or an "
                "external declaration cannot be printed)",
            )
        block = region.blocks[0]
        if len(block.args) != len(ftype.inputs.data):
            raise self.error(
                fn,
                "workgroup or private attributions are not printed (workgroup buffers are "
                "memref.globals in memory space 3, private ones memref.alloca)",
            )
        params, prologue = [], []
        for k, arg in enumerate(block.args):
            try:
                ctype = self.memref_arg(arg.type)
            except _Unsupported as e:
                raise self.error(fn, f"argument {k}: {e}") from None
            self.pointers[arg] = _Pointer(f"arg{k}", "global")
            if self.kernel:
                params.append(", ".join(self.fl.kernel_params(k, ctype)))
                prologue += self.fl.kernel_prologue(k, ctype)
            else:
                params.append(f"{self.fl.address_space('global')}{ctype}* arg{k}")
        self.lines += ["    " + line for line in prologue]
        self.declare_workgroup_buffers(block)
        self.print_block(block)
        prefix = self.fl.kernel_prefix if self.kernel else self.fl.device_prefix
        head = f"{prefix} {self.fn_name}("
        signature = head + (", ".join(params) or "void") + ")"
        if len(signature) > 100:  # one parameter (OpenCL: buffer and byte offset) per line
            signature = head + (",\n" + " " * len(head)).join(params) + ")"
        return signature + "\n{\n" + "\n".join(self.lines) + ("\n" if self.lines else "") + "}\n"

    def memref_arg(self, t: Attribute) -> str:
        if not isinstance(t, MemRefType):
            raise _Unsupported(f"kernel arguments are memrefs (got {t})")
        if _memory_space(t) not in (0, 1):
            raise _Unsupported(f"a kernel argument lives in global memory (got {t})")
        _layout(t, "argument")
        e = self.element(t.element_type)
        return self.fl.mem_ctype(e)

    def declare_workgroup_buffers(self, block: Block) -> None:
        """Workgroup arrays at kernel function scope (OpenCL allows __local nowhere else)."""
        for op in block.walk():
            if op.name != "memref.get_global":
                continue
            try:
                self.workgroup_buffer(op)
            except _Unsupported as e:
                raise self.error(op, str(e)) from None

    def workgroup_buffer(self, op: Operation) -> None:
        ref = op.properties.get("name")
        if not isinstance(ref, SymbolRefAttr):
            raise _Unsupported("the op names no global")
        symbol = ref.root_reference.data
        try:
            glob = SymbolTable.lookup_symbol(op, ref)
        except ValueError:
            glob = None
        if glob is None or glob.name != "memref.global":
            raise _Unsupported(f"no memref.global @{symbol} in the enclosing module")
        t = glob.properties.get("type")
        if not isinstance(t, MemRefType) or _memory_space(t) != 3:
            raise _Unsupported(
                f"@{symbol} is not a workgroup buffer (memory space 3); weights and other "
                "buffers reach a kernel as arguments"
            )
        if not self.kernel and self.fl.name == "opencl":
            raise _Unsupported("OpenCL declares workgroup (__local) buffers in kernels only")
        if symbol not in self.workgroup:
            name = symbol
            if (
                not _IDENTIFIER.fullmatch(name)
                or name in self.fl.reserved
                or _LOCAL_NAME.fullmatch(name)
                or name == self.fn_name
            ):
                name = "zg_" + re.sub(r"[^A-Za-z0-9_]", "_", symbol)
            self.workgroup[symbol] = name
            ctype = self.fl.mem_ctype(self.element(t.element_type))
            self.line(self.fl.workgroup_array(ctype, name, _extent(t)))
        self.pointers[op.results[0]] = _Pointer(self.workgroup[symbol], "local")

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op(op)

    def print_op(self, op: Operation) -> None:
        name = _op_name(op)
        handler = _HANDLERS.get(name)
        if handler is None:
            if name == "scf.parallel":
                raise self.error(
                    op,
                    "parallel loops are not printed; schedule the kernel "
                    "with parallel = 0 (GPU kernels use gpu.thread_id / block_id)",
                )
            raise self.error(op, "the op has no C translation")
        try:
            handler(self, op)
        except PrintError:
            raise
        except _Unsupported as e:
            raise self.error(op, str(e)) from None
        except (AttributeError, KeyError, IndexError, TypeError, ValueError, AssertionError) as e:
            raise self.error(op, f"malformed op ({type(e).__name__}: {e})") from e

    # --------------------------------------------------------------------------- helpers
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def element(self, t: Attribute) -> _Elem:
        e = _elem(t)
        if e == _Elem("f", 64):
            self.uses_f64 = True
        return e

    def vec(self, t: Attribute) -> _Vec | None:
        """The vector layout of a vector type; None for scalars."""
        if not isinstance(t, VectorType):
            return None
        shape = t.get_shape()
        if len(shape) != 1 or any(
            isinstance(d, IntegerAttr) and d.value.data for d in t.scalable_dims.data
        ):
            raise _Unsupported(f"only fixed rank-1 vectors are printed (got {t})")
        e = self.element(t.element_type)
        return _Vec(e, shape[0], self.fl.storage(shape[0]))

    def scalar_of(self, t: Attribute) -> _Elem:
        """The element type of a scalar or vector type."""
        return self.element(t.element_type if isinstance(t, VectorType) else t)

    def ctype(self, t: Attribute) -> str:
        v = self.vec(t)
        if v is not None:
            return self.fl.vtype(v)
        if isinstance(t, MemRefType):
            raise _Unsupported(f"a memref ({t}) cannot be a C value here")
        return self.fl.ctype(self.element(t))

    def expr(self, value: SSAValue) -> str:
        name = self.names.get(value)
        if name is None:
            raise _Unsupported(f"operand {value.name_hint or ''} is not defined in the function")
        return name

    def define(self, value: SSAValue, text: str) -> str:
        """A fresh local holding `text`; returns its name."""
        name = self.fresh()
        self.line(f"{self.ctype(value.type)} {name} = {text};")
        self.names[value] = name
        return name

    def pointer(self, value: SSAValue) -> _Pointer:
        p = self.pointers.get(value)
        if p is None:
            raise _Unsupported("the memref operand has no C pointer (unknown origin)")
        return p

    def address(
        self, memref: SSAValue, indices: Sequence[SSAValue], shift: int = 0
    ) -> tuple[str, str]:
        """(pointer, linear element index) of an access: the type's offset + sum(i_k * s_k),
        plus `shift` elements."""
        t = memref.type
        if not isinstance(t, MemRefType):
            raise _Unsupported(f"{t} is not a memref")
        strides, offset = _layout(t)
        if len(indices) != len(strides):
            raise _Unsupported(f"{len(indices)} indices for a rank-{len(strides)} memref")
        const, terms = offset + shift, []
        for index, stride in zip(indices, strides):
            known = self.ints.get(index)
            if known is not None:
                const += known * stride
            elif stride == 1:
                terms.append(self.expr(index))
            elif stride != 0:
                terms.append(f"{self.expr(index)} * {stride}")
        text = " + ".join(terms)
        if not terms:
            text = str(const)
        elif const > 0:
            text += f" + {const}"
        elif const < 0:
            text += f" - {-const}"
        return self.pointer(memref).name, text

    # lanes of vector values ------------------------------------------------------------
    def lane_get(self, x: str, v: _Vec, i: int) -> str:
        """Lane i of a vector as a scalar of its element type (i1: 0 or 1)."""
        if v.storage == 1:
            return x
        text = self.fl.lane(x, i)
        return f"({text} & 1)" if v.elem.is_bool and self.fl.i1_mask else text

    def lane_put(self, text: str, v: _Vec) -> str:
        """A scalar as a lane of a vector of v's type."""
        if v.storage > 1 and v.elem.is_bool and self.fl.i1_mask:
            return {"0": "0", "1": "(-1)"}.get(text, f"-({text})")
        return text

    def construct(self, v: _Vec, lanes: Sequence[str]) -> str:
        return self.fl.construct(v, [self.lane_put(x, v) for x in lanes])


Handler = Callable[[_FunctionPrinter, Operation], None]
_HANDLERS: dict[str, Handler] = {}


_handles = registrar(_HANDLERS)
"""`@_handles("op.name", ...)`: registers the decorated function as the printer of those ops."""
