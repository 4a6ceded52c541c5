"""The golden-test machinery can fail, and every pass of every pipeline has its golden file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tilelab.compiler.passes import cse
from tilelab.compiler.passes.pipeline import PASS_FILES

from .support import check_pass, expand_aliases, filecheck

HERE = Path(__file__).parent
FILES = sorted({file for files in PASS_FILES.values() for file in files})


def test_filecheck_rejects_output_that_misses_a_check():
    with pytest.raises(AssertionError, match="FileCheck failed"):
        filecheck("%0 = tt.splat %x\n%1 = tt.load %0\n", "// CHECK: %[[P:.*]] = tt.splat\n// CHECK: tt.store %[[P]]")


def test_filecheck_rejects_a_capture_bound_to_another_value():
    with pytest.raises(AssertionError, match="FileCheck failed"):
        filecheck("%0 = tt.splat %x\n%1 = tt.load %1\n", "// CHECK: %[[P:.*]] = tt.splat\n// CHECK: tt.load %[[P]]")


def test_check_pass_fails_when_the_pass_does_not_fire():
    with pytest.raises(AssertionError, match="did not fire"):
        check_pass(cse, "tt.func @k(%x: !ptr<i32>) {\n  tt.return\n}\n// CHECK: tt.return")


def test_aliases_are_written_out_in_ir_and_checks_alike():
    text = "#r = #blocked<a=[1]>\n#s = #slice<dim=0, parent=#r>\n%0 : #s, #r2, #blocked<b>\n// CHECK: #r\n"
    expanded = "%0 : #slice<dim=0, parent=#blocked<a=[1]>>, #r2, #blocked<b>\n// CHECK: #blocked<a=[1]>\n"
    assert expand_aliases(text) == expanded


@pytest.mark.parametrize("file", FILES)
def test_every_pass_has_a_golden_file_with_a_negative_case(file):
    golden = HERE / f"test_{file}_golden.py"
    assert golden.exists(), f"no golden IR tests for the pass {file}"
    tests = [n.name for n in ast.parse(golden.read_text()).body if isinstance(n, ast.FunctionDef)]
    assert any(t.startswith("test_negative_") for t in tests), f"{golden.name} has no negative case"
    assert any(t.startswith("test_") and not t.startswith("test_negative_") for t in tests)
