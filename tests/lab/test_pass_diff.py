"""The pass diff shows what a pass did: ops matched by ``Op.uid``, renumbered SSA names are no change."""

import random

import pytest

import tilelab
import tilelab.language as tl
from tilelab.viz.models import pass_diff_rows


@tilelab.jit
def twice_range(x, out, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, BLOCK)  # the same range again: cse keeps one
    tl.store(out + a, tl.load(x + b) * 2.0)


def _record(target, name):
    block = random.choice([64, 128, 256])
    ck = tilelab.compile(
        twice_range, {"x": "*fp32", "out": "*fp32"}, {"BLOCK": block}, target=target, snapshots=True, cache=False
    )
    return next(r for r in ck.passes if r.name == name), block


@pytest.mark.parametrize("target", ["cpu", "cuda:sm_90"])
def test_cse_removing_one_range_is_one_removed_line(target):
    rec, block = _record(target, "cse")
    rows = pass_diff_rows(rec)
    changed = [r for r in rows if r.kind != "same"]
    assert [r.kind for r in changed] == ["del"]
    assert f"tt.make_range {{start = 0, end = {block}}}" in changed[0].text
    assert "loc(" not in changed[0].text  # locations hidden by default
    assert any("loc(test_pass_diff.py line" in r.text for r in pass_diff_rows(rec, locs=True))


def test_the_same_op_changed_in_place_is_a_removed_and_an_added_line():
    rec, _ = _record("cuda:sm_90", "assign-layouts")
    rows = pass_diff_rows(rec)
    dels = [r for r in rows if r.kind == "del"]
    adds = [r for r in rows if r.kind == "add"]
    assert dels and len(dels) == len(adds) and all("#blocked" in r.text or "#slice" in r.text for r in adds[:1])


def test_records_without_uids_match_lines_with_names_erased():
    class Rec:
        ir_before = "%0 = a : i32\n%1 = b : i32\n%2 = c %1 : i32\n"
        ir_after = "%0 = a : i32\n%1 = c %0 : i32\n"

    rows = pass_diff_rows(Rec())
    assert [(r.kind, r.text) for r in rows if r.kind != "same"] == [("del", "%1 = b : i32")]
