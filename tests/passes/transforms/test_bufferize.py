"""bufferize: structure (no tensors left, a sound arena plan) and numerics (numpy evaluator)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, TensorType
from xdsl.dialects.linalg.ops import FillOp, GenericOp
from xdsl.ir import Operation, SSAValue

from dialects.attributes import GROUP_ATTR, MEMORY_PLAN_ATTR
from passes.transforms.bufferize import BufferizePass, is_copy
from passes.transforms.memory_plan import (
    BufferRequest,
    check_plan,
    plan_bump,
    plan_greedy_by_size,
)
from tests.support.buffer_level_eval import BufferLevelEvaluator
from tests.support.bufferize_cases import (
    CASES,
    ELEMENTWISE,
    HDR,
    ID2,
    T23,
    X23,
    binary,
    context,
    parse,
    unary,
)

MLIR_OPT = shutil.which("mlir-opt-22")


def bufferize(src: str, planner: str = "greedy") -> ModuleOp:
    module = parse(src)
    BufferizePass(planner=planner).apply(context(), module)
    module.verify()
    return module


def main_of(module: ModuleOp) -> func.FuncOp:
    return next(
        op
        for op in module.body.block.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )


def arena_intervals(fn: func.FuncOp) -> list[tuple[int, int, int, int]]:
    """(offset, bytes, first op, last op) of each arena view, following views of views."""
    top = list(fn.body.block.ops)
    pos = {op: k for k, op in enumerate(top)}

    def uses(value: SSAValue) -> list[int]:
        found: list[int] = []
        for use in value.uses:
            op: Operation | None = use.operation
            while op is not None and op not in pos:
                op = op.parent_op()
            assert op is not None
            if isinstance(op, memref.SubviewOp | memref.ExpandShapeOp | memref.CollapseShapeOp):
                found += uses(op.results[0])
            found.append(pos[op])
        return found

    out = []
    for op in top:
        if isinstance(op, memref.ViewOp):
            const = op.byte_shift.owner
            assert isinstance(const, Operation)
            offset = const.properties["value"]
            assert isinstance(offset, IntegerAttr)
            t = op.result.type
            assert isinstance(t, MemRefType)
            nbytes = int(np.prod(t.get_shape())) * (8 if "64" in str(t.element_type) else 4)
            where = uses(op.result)
            out.append((offset.value.data, nbytes, min(where), max(where)))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_structure(name: str) -> None:
    module = bufferize(CASES[name][0])
    fn = main_of(module)
    for op in module.walk():
        for v in [*op.operands, *op.results]:
            assert not isinstance(v.type, TensorType), op
    assert not fn.function_type.outputs.data
    ret = list(fn.body.block.ops)[-1]
    assert isinstance(ret, func.ReturnOp) and not ret.operands
    views = arena_intervals(fn)
    plan = module.attributes[MEMORY_PLAN_ATTR]
    for i, (off, size, a, b) in enumerate(views):
        assert off % 64 == 0
        for off2, size2, a2, b2 in views[:i]:
            if a <= b2 and a2 <= b:
                assert off + size <= off2 or off2 + size2 <= off, "live buffers overlap"
    allocs = [op for op in fn.walk() if isinstance(op, memref.AllocOp)]
    assert len(allocs) == (1 if views else 0)
    assert str(plan).count("arena_bytes") == 1


@pytest.mark.parametrize("planner", ["greedy", "bump"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_numerics(name: str, planner: str) -> None:
    src, inputs, ref = CASES[name]
    outs = BufferLevelEvaluator(bufferize(src, planner)).run(*inputs)
    expected = ref(*inputs)
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_result_written_in_place_and_args_kept() -> None:
    fn = main_of(bufferize(ELEMENTWISE))
    names = [str(d) for d in fn.arg_attrs.data] if fn.arg_attrs else []
    assert names == ['{"ziggurat.name" = "x"}', '{"ziggurat.name" = "y"}'] or all(
        "ziggurat.name" in n for n in names
    )
    out = fn.body.block.args[-1]
    # The last kernel writes the out-param directly: no copy into it. (The exp before it writes
    # there too: the mul then overwrites the exp's dead result in place.)
    writers = [u.operation for u in out.uses]
    assert writers and not any(is_copy(w) for w in writers)
    assert not any(is_copy(op) for op in fn.walk())
    last = [op for op in fn.body.block.ops if isinstance(op, GenericOp)][-1]
    assert last.outputs[0] is out


def test_concat_and_pad_are_copy_free() -> None:
    for name, n_copies in (("concat", 0), ("pad", 1)):
        fn = main_of(bufferize(CASES[name][0]))
        copies = [op for op in fn.walk() if is_copy(op)]
        assert len(copies) == n_copies, name
        assert not any(isinstance(op, memref.AllocOp) for op in fn.walk())


def test_pad_of_an_intermediate_is_written_by_its_producer() -> None:
    # The border fill sat between the producer (exp) and the copy into the padded buffer; it
    # moves in front of the producer, into its fusion group, and exp writes the interior.
    fn = main_of(bufferize(CASES["pad_of_produced"][0]))
    assert not [op for op in fn.walk() if is_copy(op)]
    ops = [op for op in fn.body.block.ops if isinstance(op, GenericOp | FillOp)]
    fill, exp, neg = ops
    assert isinstance(fill, FillOp) and "math.exp" in str(exp) and "arith.negf" in str(neg)
    assert fill.attributes[GROUP_ATTR] == exp.attributes[GROUP_ATTR] != neg.attributes[GROUP_ATTR]
    interior = exp.outputs[0].owner
    assert isinstance(interior, memref.SubviewOp)
    assert interior.source is fill.outputs[0]


def test_a_result_returned_through_a_reshape_is_written_in_place() -> None:
    """The transpose writes the out-param seen in its own shape: no copy, no arena."""
    fn = main_of(bufferize(CASES["transpose_reshaped"][0]))
    assert not [op for op in fn.walk() if is_copy(op)]
    assert not [op for op in fn.walk() if isinstance(op, memref.AllocOp)]
    (kernel,) = [op for op in fn.body.block.ops if isinstance(op, GenericOp)]
    written = kernel.outputs[0]
    assert isinstance(written.owner, memref.ExpandShapeOp)  # out [6] seen as [3, 2]
    assert written.owner.operands[0] is fn.body.block.args[-1]


def test_a_reshaped_result_concatenated_is_written_into_its_place() -> None:
    """transpose -> reshape -> concat: the transpose writes its slice of the out-param through
    the inverse reshape of that slice (a strided view), with no arena buffer of its own."""
    fn = main_of(bufferize(CASES["concat_of_reshaped"][0]))
    kernels = [op for op in fn.body.block.ops if isinstance(op, GenericOp)]
    transpose = next(k for k in kernels if "math.exp" in str(k))
    view = transpose.outputs[0].owner
    assert isinstance(view, memref.ExpandShapeOp)
    sub = view.operands[0].owner
    assert isinstance(sub, memref.SubviewOp) and sub.source is fn.body.block.args[-1]


def test_views_into_a_replaced_buffer_take_its_new_layout() -> None:
    """The concatenation written in place of the output: the subviews its parts are written
    through now have the output's strides (a stale type read the wrong elements)."""
    fn = main_of(bufferize(CASES["nested_concat"][0]))
    kernels = [op for op in fn.body.block.ops if isinstance(op, GenericOp)]
    written = [k.outputs[0].type for k in kernels if "math.exp" in str(k) or "negf" in str(k)]
    # exp and neg write their halves of the pairs straight into the output (row stride 8)
    assert [t.get_strides() for t in written] == [(8, 2), (8, 2)]  # type: ignore[attr-defined]
    assert not [op for op in fn.walk() if isinstance(op, memref.AllocOp)]


def test_two_consumers_copies_init() -> None:
    fn = main_of(bufferize(CASES["two_consumers"][0]))
    assert len([op for op in fn.walk() if is_copy(op)]) == 1


def test_constants_deduplicated() -> None:
    src = ELEMENTWISE.replace(
        "%e0 = tensor.empty()",
        "%cst2 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>\n"
        "  %e0 = tensor.empty()",
    ).replace("ins(%b, %a :", "ins(%cst2, %a :")
    module = bufferize(src)
    assert len([op for op in module.body.block.ops if isinstance(op, memref.GlobalOp)]) == 1
    out = BufferLevelEvaluator(module).run(X23)[0]
    np.testing.assert_allclose(out, C23_times(X23), rtol=1e-5)


def C23_times(x: np.ndarray) -> np.ndarray:  # noqa: N802
    c = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    return c * (x + c)


def test_greedy_reuses_memory_of_dead_buffers() -> None:
    # x -> a -> b -> c -> y: three intermediates, only two ever live together.
    body = ""
    prev = "%x"
    for k, name in enumerate(["%a", "%b", "%c", "%d"]):
        body += f"\n  %e{k} = tensor.empty() : {T23}"
        # Rows flipped (d0 -> 1 - d0): not elementwise in place, so each result needs a buffer.
        body += unary(name, prev, f"%e{k}", T23, "math.tanh %in : f32").replace(
            f"[{ID2}, {ID2}]", f"[affine_map<(d0, d1) -> (1 - d0, d1)>, {ID2}]"
        )
        prev = name
    src = f"{HDR} -> {T23} {{{body}\n  return %d : {T23}\n}}"
    greedy = str(bufferize(src).attributes[MEMORY_PLAN_ATTR])
    bump = str(bufferize(src, "bump").attributes[MEMORY_PLAN_ATTR])
    assert "arena_bytes = 128" in greedy and "arena_bytes = 192" in bump
    module = bufferize(src)
    np.testing.assert_allclose(
        BufferLevelEvaluator(module).run(X23)[0], np.tanh(np.tanh(np.tanh(np.tanh(X23)))), rtol=1e-5
    )


def test_planners_on_numbers() -> None:
    reqs = [BufferRequest(100, 0, 1), BufferRequest(64, 1, 2), BufferRequest(100, 2, 3)]
    for planner in (plan_bump, plan_greedy_by_size):
        plan = planner(reqs)
        check_plan(reqs, plan)
        assert plan.total_bytes == 264
    assert plan_bump(reqs).arena_bytes == 128 + 64 + 128
    assert plan_greedy_by_size(reqs).arena_bytes == 128 + 64


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-22 not installed")
@pytest.mark.parametrize("name", ["elementwise", "concat", "slices", "gather", "returns"])
def test_mlir_opt_accepts(name: str) -> None:
    text = str(bufferize(CASES[name][0]))
    proc = subprocess.run([MLIR_OPT], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---- elementwise kernels writing in place over a dead input ---------------------------------

T32 = "tensor<3x2xf32>"
TRANSPOSED = "affine_map<(d0, d1) -> (d1, d0)>"


def transpose_to_result(name: str, x: str) -> str:
    """`%y = transpose(x)` into a fresh 3x2 tensor: not elementwise, so it keeps `x` in the
    arena (copy elision would otherwise move a whole elementwise chain into the out-param)."""
    return f"""
  %et = tensor.empty() : {T32}
  {name} = linalg.generic {{indexing_maps = [{TRANSPOSED}, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins({x} : {T23}) outs(%et : {T32}) {{
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }} -> {T32}"""


def in_place_program(body: str, result: str = "%b", result_type: str = T23) -> str:
    tail = transpose_to_result("%y", result) if result_type == T23 else ""
    ret, ret_t = ("%y", T32) if result_type == T23 else (result, result_type)
    return (
        f'{HDR} -> ({ret_t} {{ziggurat.name = "y"}}) {{{body}{tail}\n  return {ret} : {ret_t}\n}}'
    )


TANH_A = f"\n  %e0 = tensor.empty() : {T23}" + unary("%a", "%x", "%e0", T23, "math.tanh %in : f32")
EXP_B = f"\n  %e1 = tensor.empty() : {T23}" + unary("%b", "%a", "%e1", T23, "math.exp %in : f32")

# name -> (body, reference of the transposed result[, result name, default %b])
IN_PLACE_CASES: dict[str, tuple] = {
    # %a is dead after %b: exp overwrites it.
    "in_place": (TANH_A + EXP_B, lambda x: np.exp(np.tanh(x)).T),
    # %a is read again by %c: exp needs its own buffer.
    "input_used_later": (
        TANH_A
        + EXP_B
        + f"\n  %e2 = tensor.empty() : {T23}"
        + binary("%c", "%b", "%a", "%e2", T23, "arith.mulf %p, %q : f32"),
        lambda x: (np.exp(np.tanh(x)) * np.tanh(x)).T,
        "%c",
    ),
    # Row 0 of %a is read for every row: writing row 1 is fine but row 0 of the result would
    # clobber what rows 1.. still need.
    "broadcast_map": (
        TANH_A
        + f"""
  %e1 = tensor.empty() : {T23}
  %b = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, {ID2}], iterator_types = ["parallel", "parallel"]}} ins(%a : {T23}) outs(%e1 : {T23}) {{
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }} -> {T23}""",
        lambda x: np.broadcast_to(np.exp(np.tanh(x[:1])), (2, 3)).T,
    ),
    # The caller's input buffer is never overwritten.
    "argument_input": (
        f"\n  %e1 = tensor.empty() : {T23}" + unary("%b", "%x", "%e1", T23, "math.exp %in : f32"),
        lambda x: np.exp(x).T,
    ),
}

T234 = "tensor<2x3x4xf32>"
DIFFERENT_SHAPE = in_place_program(
    TANH_A
    + f"""
  %e1 = tensor.empty() : {T234}
  %b = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%a : {T23}) outs(%e1 : {T234}) {{
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }} -> {T234}""",
    result_type=T234,
)


def kernel_with(fn: func.FuncOp, body_op: str = "math.exp") -> GenericOp:
    """The one generic of `fn` whose body contains `body_op`."""
    (kernel,) = [
        op
        for op in fn.walk()
        if isinstance(op, GenericOp) and any(o.name == body_op for o in op.body.walk())
    ]
    return kernel


def test_elementwise_writes_over_its_dead_input() -> None:
    fn = main_of(bufferize(in_place_program(IN_PLACE_CASES["in_place"][0])))
    exp = kernel_with(fn)
    ins, outs = exp.operands[:1], exp.operands[1:]
    assert outs[0] is ins[0]
    assert isinstance(ins[0].owner, memref.ViewOp)  # an arena intermediate
    # One 24-byte buffer for %a and %b (the transpose writes the out-param).
    assert len([op for op in fn.body.block.ops if isinstance(op, memref.ViewOp)]) == 1


@pytest.mark.parametrize("name", ["input_used_later", "broadcast_map", "argument_input"])
def test_elementwise_not_in_place_when_unsafe(name: str) -> None:
    src, _, *result = IN_PLACE_CASES[name]
    fn = main_of(bufferize(in_place_program(src, *result)))
    exp = kernel_with(fn)
    assert exp.operands[1] is not exp.operands[0]
    assert isinstance(exp.operands[1].owner, memref.ViewOp)


def test_elementwise_not_in_place_across_shapes() -> None:
    fn = main_of(bufferize(DIFFERENT_SHAPE))
    exp = kernel_with(fn)
    assert exp.operands[1] is not exp.operands[0]
    assert exp.operands[1] is fn.body.block.args[-1]  # written straight into the out-param


def test_elementwise_not_in_place_across_positions() -> None:
    # d = b - transpose(b) reads b at two positions: it may not write over b.
    src = in_place_program(
        TANH_A
        + EXP_B
        + f"""
  %e2 = tensor.empty() : {T23}
  %d = linalg.generic {{indexing_maps = [{ID2}, affine_map<(d0, d1) -> (0, 0)>, {ID2}], iterator_types = ["parallel", "parallel"]}} ins(%b, %b : {T23}, {T23}) outs(%e2 : {T23}) {{
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.subf %p, %q : f32
    linalg.yield %r : f32
  }} -> {T23}""",
        result="%d",
    )
    module = bufferize(src)
    sub = kernel_with(main_of(module), "arith.subf")
    assert sub.outputs[0] is not sub.inputs[0]
    b = np.exp(np.tanh(X23))
    np.testing.assert_allclose(BufferLevelEvaluator(module).run(X23)[0], (b - b[0, 0]).T, rtol=1e-5)


@pytest.mark.parametrize("planner", ["greedy", "bump"])
@pytest.mark.parametrize("name", sorted(IN_PLACE_CASES))
def test_in_place_numerics(name: str, planner: str) -> None:
    src, ref, *result = IN_PLACE_CASES[name]
    out = BufferLevelEvaluator(bufferize(in_place_program(src, *result), planner)).run(X23)[0]
    np.testing.assert_allclose(out, ref(X23), rtol=1e-5, atol=1e-6)


def test_different_shape_numerics() -> None:
    out = BufferLevelEvaluator(bufferize(DIFFERENT_SHAPE)).run(X23)[0]
    want = np.broadcast_to(np.exp(np.tanh(X23))[:, :, None], (2, 3, 4))
    np.testing.assert_allclose(out, want, rtol=1e-5)


class CountingDict(dict):
    """A dict that counts its lookups."""

    lookups = 0

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        CountingDict.lookups += 1
        return super().get(key, default)

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        CountingDict.lookups += 1
        return super().__getitem__(key)


def long_chain(n: int) -> tuple[str, np.ndarray]:
    """`n` chained elementwise ops (tanh, exp, every tenth one adding its own constant) read by
    a transpose, and what they compute from X23."""
    body, prev, want = "", "%x", X23.copy()
    for i in range(n):
        body += f"\n  %e{i} = tensor.empty() : {T23}"
        if i % 10 == 9:
            body += f"\n  %c{i} = arith.constant dense<{i / n}> : {T23}"
            body += binary(f"%v{i}", prev, f"%c{i}", f"%e{i}", T23, "arith.addf %p, %q : f32")
            want = want + np.float32(i / n)
        else:
            op = "math.tanh" if i % 2 else "math.exp"
            body += unary(f"%v{i}", prev, f"%e{i}", T23, f"{op} %in : f32")
            want = np.tanh(want) if i % 2 else np.exp(want)
        prev = f"%v{i}"
    return in_place_program(body, result=prev), want.T


def test_long_chain_in_place_with_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: along a chain written in place, one buffer holds every tensor of the chain;
    asking at each op whether those tensors are still live made bufferize quadratic (2,000
    ops: 2 million liveness lookups). Dead tensors leave the buffer's residents for good."""
    import passes.transforms.bufferize as bufferize_module

    class CountingBufferizer(bufferize_module._Bufferizer):
        def __post_init__(self) -> None:
            super().__post_init__()
            self.last_use = CountingDict()

    monkeypatch.setattr(bufferize_module, "_Bufferizer", CountingBufferizer)
    n = 400
    src, want = long_chain(n)
    CountingDict.lookups = 0
    module = bufferize(src)
    assert CountingDict.lookups < 30 * n  # one scan of all past tensors per op: over 80,000
    fn = main_of(module)
    chain = [op for op in fn.body.block.ops if isinstance(op, GenericOp)][1:-1]
    assert len(chain) == n - 1 and all(op.outputs[0] is op.inputs[0] for op in chain)
    assert len([op for op in fn.body.block.ops if isinstance(op, memref.ViewOp)]) == 1
    globals_ = [op for op in module.body.block.ops if isinstance(op, memref.GlobalOp)]
    assert len({g.sym_name.data for g in globals_}) == n // 10
    np.testing.assert_allclose(BufferLevelEvaluator(module).run(X23)[0], want, rtol=1e-5)
