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
