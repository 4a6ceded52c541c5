"""The pass manager and the pipelines: records, snapshots, tracing, verification between passes."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.ir import print_module
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.passes import manager
from tilelab.compiler.passes.manager import PassError, PassManager
from tilelab.compiler.passes.pipeline import PIPELINES, Pass

from .support import assert_same_values

KERNEL = """
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>, %n: i32) {
  %0 = tt.get_program_id {axis = 0} : i32
  %1 = arith.constant {value = 8} : i32
  %2 = arith.constant {value = 2} : i32
  %3 = arith.mul %1, %2 : i32
  %4 = arith.mul %0, %3 : i32
  %5 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
  %6 = tt.splat %4 : tensor<16xi32>
  %7 = arith.add %6, %5 : tensor<16xi32>
  %8 = tt.splat %n : tensor<16xi32>
  %9 = arith.cmp lt %7, %8 : tensor<16xi1>
  %10 = tt.splat %x : tensor<16x!ptr<f32>>
  %11 = tt.addptr %10, %7 : tensor<16x!ptr<f32>>
  %12 = tt.load %11, %9 : tensor<16xf32>
  %13 = tt.call %12 {callee = "square"} : tensor<16xf32>
  %14 = tt.splat %out : tensor<16x!ptr<f32>>
  %15 = tt.addptr %14, %7 : tensor<16x!ptr<f32>>
  %16 = arith.constant {value = 0} : i32
  %17 = arith.constant {value = 1} : i32
  %18 = scf.for %i = %16 to %2 step %17 iter_args(%acc = %13) -> (tensor<16xf32>) {
    %19 = tt.splat %n : tensor<16xi32>
    %20 = tt.cast %19 : tensor<16xf32>
    %21 = arith.add %acc, %20 : tensor<16xf32>
    scf.yield %21 : tensor<16xf32>
  }
  tt.store %15, %18, %9 : tensor<16x!ptr<f32>>
  tt.return
}
tt.func @square(%v: tensor<16xf32>) -> (tensor<16xf32>) {
  %0 = arith.mul %v, %v : tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}
"""


@pytest.mark.parametrize("target", sorted(PIPELINES))
def test_pipeline_records_every_pass(target):
    module = parse_module(KERNEL)
    records = PassManager(PIPELINES[target], snapshots=True).run(module)
    assert [r.name for r in records] == [p.name for p in PIPELINES[target]]
    assert all(r.changed for r in records[:2])  # inline and canonicalize have work here
    assert records[0].ir_before == print_module(parse_module(KERNEL))
    for prev, cur in zip(records, records[1:]):
        assert cur.ir_before == prev.ir_after
    assert records[-1].ir_after == print_module(module)
    assert any(rule.rule == "inline_call" for rule in records[0].rules)


@pytest.mark.parametrize("target", sorted(PIPELINES))
def test_pipeline_preserves_values(target, rng):
    class Pipeline:
        @staticmethod
        def run(module):
            return any(r.changed for r in PassManager(PIPELINES[target]).run(module))

    def args():
        return [rng.standard_normal(40).astype(np.float32), np.full(40, np.nan, np.float32), 40]

    assert_same_values(Pipeline, KERNEL, args, grid=(3,))


def test_no_printing_without_snapshots(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("printed although snapshots=False")

    monkeypatch.setattr(manager, "print_module_uids", forbidden)
    records = PassManager(PIPELINES["cuda"]).run(parse_module(KERNEL))
    assert all(r.ir_before is None and r.ir_after is None and r.rules == [] for r in records)
    assert all(r.seconds >= 0 for r in records)


def test_a_pass_that_breaks_the_ir_is_named():
    def drop_return(module):
        module.kernel.body.ops.pop()
        return True

    with pytest.raises(PassError, match="pass 'drop-return' broke the IR: .*does not end with tt.return"):
        PassManager([Pass("drop-return", drop_return, "breaks things")]).run(parse_module(KERNEL))


def test_invalid_input_is_reported_before_any_pass():
    module = parse_module(KERNEL)
    module.kernel.body.ops.pop()
    with pytest.raises(PassError, match="invalid before the first pass"):
        PassManager(PIPELINES["cpu"]).run(module)


def test_pipeline_entries_are_documented_passes():
    for passes in PIPELINES.values():
        for p in passes:
            assert p.name and callable(p.run) and p.doc and not p.doc.startswith(" ")
