"""The parser reads back exactly what the printer writes, for every op."""

from __future__ import annotations

import pytest

from tilelab.compiler import ir
from tilelab.compiler.ir import Builder, Loc, Module, print_module, verify
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    AssertOp,
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncTMACopyOp,
    AsyncTMAStoreOp,
    AsyncWaitOp,
    AtomicCASOp,
    AtomicRMWOp,
    BarrierOp,
    BinaryOp,
    BitcastOp,
    BroadcastOp,
    CallOp,
    CastOp,
    CatOp,
    CmpOp,
    ConditionOp,
    ConstantOp,
    ConvertLayoutOp,
    DotOp,
    ExpandDimsOp,
    FenceAsyncSharedOp,
    FlipOp,
    FmaOp,
    ForOp,
    FuncOp,
    GatherOp,
    HintOp,
    HistogramOp,
    IfOp,
    InitBarriersOp,
    InlineAsmOp,
    InvalBarriersOp,
    JoinOp,
    LoadOp,
    LocalAllocOp,
    LocalLoadOp,
    LocalStoreOp,
    MakeRangeOp,
    MemDescIndexOp,
    MemDescTransOp,
    NumProgramsOp,
    PrintOp,
    ProgramIdOp,
    ReduceOp,
    ReduceReturnOp,
    ReshapeOp,
    ReturnOp,
    ScanOp,
    SelectOp,
    SortOp,
    SplatOp,
    SplitOp,
    StoreOp,
    TensorMapOp,
    TransOp,
    UnaryOp,
    WaitBarrierOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
    WhileOp,
    YieldOp,
)
from tilelab.compiler.ir.ops.memory import Descriptor
from tilelab.compiler.ir.parser import ParseError, parse_module
from tilelab.compiler.ir.types import PointerType, TensorType, f16, f32, i1, i32, i64, tensor
from tilelab.compiler.layouts import nvmma_shared, row_major_shared

T = TensorType


def _helper() -> FuncOp:
    f = FuncOp("twice", [f32], [f32], ["v"], loc=Loc("k.py", 20, 0))
    b = Builder(f.body, Loc("k.py", 21, 4))
    r = b.insert(BinaryOp("add", f.args[0], f.args[0])).result
    b.insert(ReturnOp([r]))
    return f


def _elementwise(b: Builder, x, pid):
    """Every elementwise, shape and indexing op; returns a float tile."""
    n = b.insert(NumProgramsOp(1)).result
    rng = b.insert(MakeRangeOp(0, 128, T((128,), i32))).result
    s = b.insert(SplatOp(b.insert(BinaryOp("mul", pid, n)).result, T((128,), i32))).result
    offs = b.insert(BinaryOp("add", s, rng)).result
    offs = b.insert(HintOp(offs, "multiple_of", (16,))).result
    mask = b.insert(CmpOp("lt", offs, b.insert(ConstantOp(1000, T((128,), i32))).result)).result
    ptrs = b.insert(AddPtrOp(b.insert(SplatOp(x, T((128,), PointerType(f32)))).result, offs)).result
    other = b.insert(ConstantOp(-0.0, T((128,), f32))).result
    v = b.insert(LoadOp(ptrs, T((128,), f32), mask, other, cache=".ca", volatile=True)).result
    ring = b.insert(LocalAllocOp(T((128,), f32).with_layout(row_major_shared([128])), stages=2)).result
    view = b.insert(MemDescIndexOp(ring, b.insert(ConstantOp(1, i32)).result)).result
    b.insert(AsyncCopyGlobalToLocalOp(view, ptrs, mask))
    b.insert(AsyncCopyGlobalToLocalOp(view, ptrs))
    b.insert(AsyncCommitGroupOp())
    b.insert(AsyncWaitOp(0))
    v = b.insert(UnaryOp("exp", v)).result
    v = b.insert(FmaOp(v, v, v)).result
    v = b.insert(SelectOp(mask, v, other)).result
    h = b.insert(CastOp(v, T((128,), f16), rounding="rtz")).result
    bits = b.insert(BitcastOp(h, T((128,), ir.types.i16))).result
    b.insert(StoreOp(b.insert(SplatOp(x, T((128,), PointerType(f32)))).result, v, mask))
    asm = 'cvt.rn.f16x2.f32 $0, $1, $1; // "two"\n'  # quotes, dollars and a newline round-trip
    b.insert(InlineAsmOp(asm, "=r,r", [v], [T((128,), f16), T((128,), i32)], pure=False, pack=2))
    b.insert(PrintOp('pid "q"\n', [pid, bits], hex=True))
    b.insert(AssertOp(mask, "x < n"))
    b.insert(BarrierOp())
    b.insert(AtomicRMWOp("fadd", ptrs, v, mask))
    b.insert(AtomicCASOp(x, b.insert(ConstantOp(1.5, f32)).result, b.insert(ConstantOp(float("inf"), f32)).result))
    return v


def _shapes(b: Builder, v):
    """Shape ops, dot, reduce and scan on a float tile of 128."""
    e = b.insert(ExpandDimsOp(v, T((128, 1), f32), axis=1)).result
    m = b.insert(BroadcastOp(e, T((128, 64), f32))).result
    t = b.insert(TransOp(m, T((64, 128), f32), order=(1, 0))).result
    r = b.insert(ReshapeOp(t, T((8192,), f32), can_reorder=False)).result
    j = b.insert(JoinOp(v, v, T((128, 2), f32))).result
    b.insert(SplitOp(j, T((128,), f32)))
    b.insert(CatOp(v, v, T((256,), f32)))
    b.insert(FlipOp(v, T((128,), f32), dim=0))
    b.insert(SortOp(v, T((128,), f32), dim=0, descending=True))
    idx = b.insert(MakeRangeOp(0, 64, T((64,), i32))).result
    b.insert(GatherOp(v, idx, T((64,), f32), axis=0))
    b.insert(HistogramOp(idx, T((16,), i32)))
    odd = b.insert(CmpOp("lt", idx, b.insert(ConstantOp(7, T((64,), i32))).result)).result
    b.insert(HistogramOp(idx, T((16,), i32), mask=odd))
    b.insert(ConvertLayoutOp(v, T((128,), f32)))
    buf = b.insert(LocalAllocOp(T((128,), f32).with_layout(row_major_shared([128])), offset=16)).result
    b.insert(LocalStoreOp(buf, v))
    b.insert(LocalLoadOp(buf, T((128,), f32)))
    acc = b.insert(ConstantOp(0.0, T((128, 128), f32))).result
    d = b.insert(DotOp(m, t, acc, input_precision="tf32")).result
    sa = b.insert(LocalAllocOp(T((128, 64), f32).with_layout(row_major_shared([128, 64])))).result
    sb = b.insert(LocalAllocOp(T((128, 64), f32).with_layout(row_major_shared([128, 64])))).result
    sb = b.insert(MemDescTransOp(sb, T((64, 128), f32).with_layout(row_major_shared([64, 128])))).result
    b.insert(FenceAsyncSharedOp())
    d = b.insert(WarpGroupDotOp(sa, sb, d)).result
    d = b.insert(WarpGroupDotWaitOp(d, 0)).result
    red = b.insert(ReduceOp([d], 1, [T((128,), f32)]))
    with b.at_end(red.combine):
        b.insert(ReduceReturnOp([b.insert(BinaryOp("max", *red.combine.args)).result]))
    scan = b.insert(ScanOp([r], 0, reverse=True))
    with b.at_end(scan.combine):
        b.insert(ReduceReturnOp([b.insert(BinaryOp("add", *scan.combine.args)).result]))
    return red.result


def _control(b: Builder, v, pid):
    """for (with iter_args and num_stages), if/else, while and call."""
    lb, ub, st = (b.insert(ConstantOp(c, i32)).result for c in (0, 10, 1))
    loop = b.insert(ForOp(lb, ub, st, [v], num_stages=3))
    loop.body.args[0].name_hint = "k"
    with b.at_end(loop.body):
        b.insert(YieldOp([b.insert(BinaryOp("add", loop.body.args[1], v)).result]))
    empty = b.insert(ForOp(lb, ub, st, []))
    with b.at_end(empty.body):
        b.insert(YieldOp([]))
    cond = b.insert(CmpOp("eq", pid, lb)).result
    branch = b.insert(IfOp(cond, [f32]))
    with b.at_end(branch.then_block):
        b.insert(YieldOp([b.insert(ConstantOp(True, i1)).result and b.insert(ConstantOp(2.0, f32)).result]))
    with b.at_end(branch.else_block):
        b.insert(YieldOp([b.insert(CallOp("twice", [b.insert(ConstantOp(3.0, f32)).result], [f32])).result]))
    lone = b.insert(IfOp(cond, []))
    for block in (lone.then_block, lone.else_block):
        with b.at_end(block):
            b.insert(YieldOp([]))
    loop2 = b.insert(WhileOp([pid, b.insert(ConstantOp(7, i64)).result]))
    with b.at_end(loop2.before):
        c = b.insert(CmpOp("lt", loop2.before.args[0], ub)).result
        b.insert(ConditionOp(c, list(loop2.before.args)))
    with b.at_end(loop2.after):
        nxt = b.insert(BinaryOp("add", loop2.after.args[0], st)).result
        b.insert(YieldOp([nxt, loop2.after.args[1]]))
    b.insert(ConstantOp(False, i1))


def _tma(b: Builder, x, pid):
    """A descriptor's load, a tensor map, a TMA copy into a ring stage and the mbarriers it arrives on."""
    n, one, zero = (b.insert(ConstantOp(c, t)).result for c, t in ((128, i32), (1, i64), (0, i32)))
    ptrs = b.insert(SplatOp(x, T((128, 64), PointerType(f32)))).result
    b.insert(LoadOp(ptrs, T((128, 64), f32), descriptor=Descriptor(x, (n, n), (n, one), (pid, zero))))
    tmap = b.insert(TensorMapOp(x, [n, n], [n, one], [128, 32], 128)).result
    ring = b.insert(LocalAllocOp(T((128, 64), f32).with_layout(nvmma_shared([128, 64], 4, 128)), stages=2)).result
    bars = b.insert(LocalAllocOp(T((2,), i64).with_layout(row_major_shared([2])))).result
    b.insert(InitBarriersOp(bars, 2, count=1))
    view = b.insert(MemDescIndexOp(ring, zero)).result
    b.insert(AsyncTMACopyOp(view, tmap, bars, zero, b.insert(CmpOp("eq", pid, zero)).result, [pid, zero]))
    b.insert(WaitBarrierOp(bars, zero, zero))
    b.insert(InvalBarriersOp(bars, 2))
    b.insert(AsyncTMAStoreOp(view, tmap, [pid, zero]))


def build_every_op() -> Module:
    """A module that uses every op of ``ops.py`` (it need not compute anything useful)."""
    k = FuncOp("kernel", [PointerType(f32), i32], [], ["x", "n"], loc=Loc("k.py", 1, 0))
    b = Builder(k.body, Loc("k.py", 2, 4))
    pid = b.insert(ProgramIdOp(0)).result
    v = _elementwise(b, k.args[0], pid)
    _shapes(b, v)
    _control(b, v, pid)
    _tma(b, k.args[0], pid)
    b.insert(ReturnOp([]))
    return Module([k, _helper()], "kernel")


def test_every_op_is_covered():
    module = build_every_op()
    used = {type(op).__name__ for op in module.walk()}
    every = {n for n in ir.ops.__all__ if n[0].isupper() and n.endswith("Op")}
    assert every - used == set()


@pytest.mark.parametrize("locs", [True, False])
def test_round_trip_every_op(locs):
    module = build_every_op()
    verify(module)
    text = print_module(module, locs=locs)
    parsed = parse_module(text)
    verify(parsed)
    assert print_module(parsed, locs=locs) == text
    assert parsed.kernel.sym_name == "kernel"


def test_hidden_attributes_come_back():
    parsed = parse_module(print_module(build_every_op()))
    load = next(op for op in parsed.walk() if isinstance(op, LoadOp))
    assert load.attrs == {
        "has_mask": True,
        "has_other": True,
        "cache": ".ca",
        "eviction": "",
        "volatile": True,
    }
    store = next(op for op in parsed.walk() if isinstance(op, StoreOp))
    assert store.mask is store.operands[2]
    false = [op for op in parsed.walk() if isinstance(op, ConstantOp) and op.result.type == i1]
    assert [op.value for op in false] == [True, False]
    assert "arith.constant {value = false} : i1" in print_module(parsed)
    assert next(op for op in parsed.walk() if isinstance(op, ForOp)).attrs["num_stages"] == 3


def test_values_and_types_come_back():
    parsed = parse_module(print_module(build_every_op()))
    k = parsed.kernel
    assert [a.type for a in k.args] == [PointerType(f32), i32]
    assert k.attrs["arg_names"] == ("x", "n")
    assert parsed.get("twice").attrs["result_types"] == (f32,)
    load = next(op for op in parsed.walk() if isinstance(op, LoadOp))
    assert load.result.type == tensor((128,), f32)
    assert load.ptr.type == T((128,), PointerType(f32))
    cst = [op.value for op in parsed.walk() if isinstance(op, ConstantOp)]
    assert float("inf") in cst and 1.5 in cst and 1000 in cst
    neg0 = next(v for v in cst if isinstance(v, float) and v == 0 and str(v) == "-0.0")
    assert str(neg0) == "-0.0"
    assert next(op for op in parsed.walk() if isinstance(op, PrintOp)).attrs["prefix"] == 'pid "q"\n'


def test_locations_come_back():
    parsed = parse_module(print_module(build_every_op()))
    assert parsed.kernel.loc == Loc("k.py", 1, 0)
    assert next(iter(parsed.kernel.body.ops)).loc == Loc("k.py", 2, 4)


def test_kernel_is_the_uncalled_function():
    text = print_module(build_every_op())
    helper_first = text[text.index("tt.func @twice") :] + text[: text.index("tt.func @twice")]
    assert parse_module(helper_first).kernel.sym_name == "kernel"
    assert parse_module(text, kernel="twice").kernel.sym_name == "twice"


HAND_WRITTEN = """
// a comment
tt.func @k(%x: !ptr<f32>, %n: i32) {
  %0 = tt.get_program_id {axis = 0} : i32
  %1 = arith.cmp lt %0, %n : i1
  %2 = tt.splat %x : tensor<4x!ptr<f32>>
  tt.return
}
"""


def test_hand_written_text():
    m = parse_module(HAND_WRITTEN)
    verify(m)
    cmp = m.kernel.body.ops[1]
    assert isinstance(cmp, CmpOp) and cmp.predicate == "lt" and cmp.operands[1] is m.kernel.args[1]


@pytest.mark.parametrize(
    "bad, line, message",
    [
        ("  %1 = arith.add %9, %0 : i32", 3, "unknown value %9"),
        ("  %1 = arith.plus %0, %0 : i32", 3, "unknown op 'arith.plus'"),
        ("  %1 = arith.add %0, %0 : i33", 3, "unknown type 'i33'"),
        ("  %0 = arith.add %0, %0 : i32", 3, "%0 is defined twice"),
        ("  %1 = arith.add %0, %0 : i32 junk", 3, "unexpected text"),
        ("  %1, %2 = arith.add %0, %0 : i32", 3, "arith.add gives 1 results, not 2"),
    ],
)
def test_errors_name_the_line(bad, line, message):
    text = f"tt.func @k(%n: i32) {{\n  %0 = arith.add %n, %n : i32\n{bad}\n  tt.return\n}}\n"
    with pytest.raises(ParseError, match=f"^line {line}: {message}"):
        parse_module(text)


def test_missing_brace_is_reported():
    with pytest.raises(ParseError, match="line 2: unexpected end of text"):
        parse_module("tt.func @k(%n: i32) {\n  tt.return\n")


def test_layouts_parse_with_a_custom_or_the_default_parser():
    text = "tt.func @k(%n: tensor<4xi32, #blocked<[1], [32]>>) {\n  tt.return\n}\n"
    with pytest.raises(ParseError, match="line 1: bad layout"):
        parse_module(text)
    m = parse_module(text, layout_parser=lambda s, dims: (s, dims))
    assert m.kernel.args[0].type.layout == ("#blocked<[1], [32]>", (4,))


def test_kinds_of_hint_and_atomic_ops_survive():
    parsed = parse_module(print_module(build_every_op()))
    kinds = {op.name: op.attrs["kind"] for op in parsed.walk() if isinstance(op, (HintOp, AtomicRMWOp))}
    assert kinds == {"tt.hint": "multiple_of", "tt.atomic_rmw": "fadd"}


def test_a_tensor_type_text_is_read_once():
    """Types are values: lines naming the same tensor type share one (a module repeats a few on most lines)."""
    ty = "tensor<8xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>"
    text = f"tt.func @k(%a: {ty}, %b: {ty}) {{\n  %0 = arith.add %a, %b : {ty}\n  tt.return\n}}\n"
    m = parse_module(text)
    a, b = m.kernel.args
    assert a.type is b.type is m.kernel.body.ops[0].result.type
    assert str(a.type) == ty and a.type.layout.shape == (8,)
    with pytest.raises(ParseError, match="line 2: unknown type 'f33'"):  # an unseen text is parsed, and checked
        parse_module(text.replace(f"%b : {ty}", f"%b : {ty.replace('f32', 'f33')}"))
