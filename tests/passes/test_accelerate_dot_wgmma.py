"""accelerate-dot on Hopper: f16/bf16 dots become ``ttng.warp_group_dot`` over ``#nvmma_shared`` buffers."""

from __future__ import annotations

import re

import pytest

from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.ops import DotOp, FenceAsyncSharedOp, LocalStoreOp, WarpGroupDotOp
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.layouts import parse_layout
from tilelab.compiler.layouts.distributed import wgmma_accumulator
from tilelab.compiler.options import CompileOptions
from tilelab.compiler.passes import accelerate_dot, assign_layouts, remove_layout_conversions

LOOP = """tt.func @k(%pa: !ptr<{t}>, %pb: !ptr<{t}>, %pc: !ptr<f32>, %n: i32) {{
  %0 = tt.make_range {{start = 0, end = {mk}}} : tensor<{mk}xi32>
  %1 = tt.reshape %0 : tensor<{m}x{k}xi32>
  %2 = tt.make_range {{start = 0, end = {kn}}} : tensor<{kn}xi32>
  %3 = tt.reshape %2 : tensor<{k}x{n}xi32>
  %4 = tt.make_range {{start = 0, end = {mn}}} : tensor<{mn}xi32>
  %5 = tt.reshape %4 : tensor<{m}x{n}xi32>
  %6 = tt.splat %pa : tensor<{m}x{k}x!ptr<{t}>>
  %7 = tt.addptr %6, %1 : tensor<{m}x{k}x!ptr<{t}>>
  %8 = tt.splat %pb : tensor<{k}x{n}x!ptr<{t}>>
  %9 = tt.addptr %8, %3 : tensor<{k}x{n}x!ptr<{t}>>
  %10 = arith.constant {{value = 0.0}} : tensor<{m}x{n}xf32>
  %11 = arith.constant {{value = 0}} : i32
  %12 = arith.constant {{value = 1}} : i32
  %13 = scf.for %i = %11 to %n step %12 iter_args(%acc = %10) -> (tensor<{m}x{n}xf32>) {{
    %14 = tt.load %7 : tensor<{m}x{k}x{t}>
    %15 = tt.load %9 : tensor<{k}x{n}x{t}>
    %16 = tt.dot %14, %15, %acc : tensor<{m}x{n}xf32>
    scf.yield %16 : tensor<{m}x{n}xf32>
  }}
  %17 = tt.splat %pc : tensor<{m}x{n}x!ptr<f32>>
  %18 = tt.addptr %17, %5 : tensor<{m}x{n}x!ptr<f32>>
  tt.store %18, %13 : tensor<{m}x{n}xf32>
  tt.return
}}
"""


def test_negative_switch_off_keeps_mma_sync():
    module = laid_out(wgmma=False)
    accelerate_dot.run(module)
    assert not of(module, WarpGroupDotOp) and of(module, DotOp)


def laid_out(t="f16", m=64, n=64, k=32, num_warps=4, arch="sm_90a", wgmma=True):
    """The loop kernel with GPU layouts assigned, for ``arch`` (None: no arch in the options)."""
    text = LOOP.format(t=t, m=m, n=n, k=k, mk=m * k, kn=k * n, mn=m * n)
    module = parse_module(text)
    module.options = CompileOptions(target="cuda", arch=arch, num_warps=num_warps, wgmma=wgmma)
    assign_layouts.run(module)
    remove_layout_conversions.run(module)
    return module


def of(module, cls):
    return [op for op in module.walk() if isinstance(op, cls)]


def test_dot_becomes_warp_group_dot_over_swizzled_buffers():
    module = laid_out()
    assert accelerate_dot.run(module)
    verify(module)
    text = print_module(module, locs=False)
    acc = "tensor<64x64xf32, #wgmma<warpsPerCTA=[4, 1], instrShape=[64, 64, 16]>>"
    assert f"arith.constant {{value = 0.0}} : {acc}" in text
    body = text[text.index("scf.for") :]
    a_buf = "tensor<64x32xf16, #nvmma_shared<swizzle=64B, elemBytes=2, order=[1, 0]>>"
    b_buf = "tensor<32x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>"
    expected = [
        rf"(%\d+) = ttg.local_alloc : {re.escape(a_buf)}",
        rf"ttg.local_store \1, %\d+ : {re.escape(a_buf)}",
        rf"(%\d+) = ttg.local_alloc : {re.escape(b_buf)}",
        rf"ttg.local_store \2, %\d+ : {re.escape(b_buf)}",
        r"ttng.fence_async_shared",
        rf"(%\d+) = ttng.warp_group_dot \1, \2, %acc(?: {{[^}}]*}})? : {re.escape(acc)}",
        r"scf.yield \3 :",
    ]
    assert re.search(r"\n\s*".join(expected), body), body
    assert not accelerate_dot.run(module)  # nothing left to convert


@pytest.mark.parametrize(
    "m, n, k, num_warps, warps, instr_n, swizzles",
    [
        (128, 128, 32, 8, [8, 1], 128, (64, 128)),  # warpgroups stack along M
        (64, 128, 64, 8, [4, 2], 64, (128, 128)),  # M fits one warpgroup: the second goes along N
        (64, 512, 16, 4, [4, 1], 256, (32, 128)),  # wider than one instruction: n256 repeats
        (64, 32, 16, 4, [4, 1], 32, (32, 64)),  # B's atom no wider than one instruction
        (128, 64, 64, 8, [8, 1], 64, (128, 128)),  # stacked along M with n64 instructions
    ],
)
def test_warpgroups_split_and_operand_swizzles(m, n, k, num_warps, warps, instr_n, swizzles):
    module = laid_out("bf16", m, n, k, num_warps)
    accelerate_dot.run(module)
    (dot,) = of(module, WarpGroupDotOp)
    assert dot.result.type.layout == wgmma_accumulator([m, n], warps, instr_n)
    assert dot.result.type.layout.params["instr_shape"] == (64, instr_n, 16)
    assert tuple(v.type.layout.params["swizzle_bytes"] for v in (dot.a, dot.b)) == swizzles
    stores = of(module, LocalStoreOp)
    assert [s.buf for s in stores] == [dot.a, dot.b] and len(of(module, FenceAsyncSharedOp)) == 1


@pytest.mark.parametrize(
    "why, kwargs",
    [
        ("Ampere", {"arch": "sm_80"}),
        ("plain sm_90 has no wgmma", {"arch": "sm_90"}),
        ("no arch recorded", {"arch": None}),
        ("M below 64", {"m": 32}),
        ("2 warps are not a warpgroup", {"num_warps": 2}),
        ("f32 operands", {"t": "f32"}),
    ],
)
def test_negative_mma_sync_or_fma_stays(why, kwargs):
    module = laid_out(**kwargs)
    accelerate_dot.run(module)
    verify(module)
    assert not of(module, WarpGroupDotOp), why
    assert of(module, DotOp)


def test_ir_round_trips_through_the_parser():
    """The new ops print and parse back (the ``#wgmma`` layout read by its constructor)."""
    module = laid_out()
    accelerate_dot.run(module)
    text = print_module(module, locs=False)

    def layouts(source: str, dims):
        if source.startswith("#wgmma<"):
            m, n = dims
            return wgmma_accumulator([m, n], [4, 1], n)
        return parse_layout(source, dims)

    again = parse_module(text, layout_parser=layouts)
    verify(again)
    assert print_module(again, locs=False) == text


CHAIN = """tt.func @k(%pa: !ptr<f16>, %pb: !ptr<f16>, %pc: !ptr<f16>, %po: !ptr<f32>) {{
  %0 = tt.make_range {{start = 0, end = {mk}}} : tensor<{mk}xi32>
  %1 = tt.reshape %0 : tensor<{m}x{k}xi32>
  %2 = tt.make_range {{start = 0, end = {kn}}} : tensor<{kn}xi32>
  %3 = tt.reshape %2 : tensor<{k}x{n}xi32>
  %4 = tt.make_range {{start = 0, end = {nd}}} : tensor<{nd}xi32>
  %5 = tt.reshape %4 : tensor<{n}x{d}xi32>
  %6 = tt.make_range {{start = 0, end = {md}}} : tensor<{md}xi32>
  %7 = tt.reshape %6 : tensor<{m}x{d}xi32>
  %8 = tt.splat %pa : tensor<{m}x{k}x!ptr<f16>>
  %9 = tt.addptr %8, %1 : tensor<{m}x{k}x!ptr<f16>>
  %10 = tt.splat %pb : tensor<{k}x{n}x!ptr<f16>>
  %11 = tt.addptr %10, %3 : tensor<{k}x{n}x!ptr<f16>>
  %12 = tt.splat %pc : tensor<{n}x{d}x!ptr<f16>>
  %13 = tt.addptr %12, %5 : tensor<{n}x{d}x!ptr<f16>>
  %14 = tt.load %9 : tensor<{m}x{k}xf16>
  %15 = tt.load %11 : tensor<{k}x{n}xf16>
  %16 = tt.load %13 : tensor<{n}x{d}xf16>
  %17 = arith.constant {{value = 0.0}} : tensor<{m}x{n}xf32>
  %18 = tt.dot %14, %15, %17 : tensor<{m}x{n}xf32>
  %19 = tt.cast %18 {{rounding = "rtne"}} : tensor<{m}x{n}xf16>
  %20 = arith.constant {{value = 0.0}} : tensor<{m}x{d}xf32>
  %21 = tt.dot %19, %16, %20 : tensor<{m}x{d}xf32>
  %22 = tt.splat %po : tensor<{m}x{d}x!ptr<f32>>
  %23 = tt.addptr %22, %7 : tensor<{m}x{d}x!ptr<f32>>
  tt.store %23, %21 : tensor<{m}x{d}xf32>
  tt.return
}}
"""


def chained(m=64, k=32, n=64, d=64, num_warps=4):
    """``(a @ b).to(f16) @ c`` (attention's shape of two dots) with GPU layouts assigned, on sm_90a."""
    text = CHAIN.format(m=m, k=k, n=n, d=d, mk=m * k, kn=k * n, nd=n * d, md=m * d)
    module = parse_module(text)
    module.options = CompileOptions(target="cuda", arch="sm_90a", num_warps=num_warps)
    assign_layouts.run(module)
    remove_layout_conversions.run(module)
    return module


@pytest.mark.parametrize("m, num_warps", [(64, 4), (128, 8)])
def test_a_computed_from_an_accumulator_stays_in_registers(m, num_warps):
    """The second dot reads its A (the first's accumulator, cast) as the A fragment: no buffer, no store."""
    module = chained(m=m, num_warps=num_warps)
    assert accelerate_dot.run(module)
    verify(module)
    first, second = of(module, WarpGroupDotOp)
    assert not first.a_in_registers and second.a_in_registers
    text = print_module(module, locs=False)
    parent = re.escape(f"#wgmma<warpsPerCTA=[{num_warps}, 1], instrShape=[64, 64, 16]>")
    body = text[text.index("ttng.warp_group_dot") :]  # from the first dot on; other ops may sit between these
    expected = [
        rf"(%\d+) = tt.cast %\d+ {{rounding = \"rtne\"}} : tensor<{m}x64xf16, {parent}>",
        rf"(%\d+) = ttg.convert_layout \1 : tensor<{m}x64xf16, #dot_op<opIdx=0, parent={parent}, kWidth=2>>",
        r"(%\d+) = ttg.local_alloc : tensor<64x64xf16, #nvmma_shared<[^>]*>>",
        r"ttg.local_store \3, %\d+",
        r"ttng.fence_async_shared",
        rf"%\d+ = ttng.warp_group_dot \2, \3, %\d+ : tensor<{m}x64xf32, {parent}>",
    ]
    assert re.search(r"[\s\S]*?".join(expected), body), body
    assert len(of(module, LocalStoreOp)) == 3  # the first dot's A and B, the second's B


def test_negative_a_split_over_warpgroups_goes_through_shared_memory():
    """Warpgroups side by side split the accumulator's columns, which every warpgroup's A needs whole."""
    module = chained(m=64, num_warps=8)
    assert accelerate_dot.run(module)
    verify(module)
    assert not any(d.a_in_registers for d in of(module, WarpGroupDotOp))
    assert len(of(module, LocalStoreOp)) == 4
