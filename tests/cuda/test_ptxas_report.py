"""ptxas's ``-v`` report read into a ``CubinResult``: registers, spills, static shared memory, and its
performance warnings as notes (no GPU, no ptxas: the report's text); and the occupancy arithmetic the compiler
weighs its registers with."""

from __future__ import annotations

import doctest

from tilelab.compiler.backends.cuda import emit
from tilelab.compiler.backends.cuda.emit import CubinResult

REPORT = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the \
presence of Extern calls in the function 'k'
ptxas info    : Function properties for k
    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem
"""


def test_the_docstring_example():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(emit._parse_report, "_parse_report", globs=vars(emit)):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_the_report_is_read():
    result = CubinResult(b"elf")
    emit._parse_report(result, REPORT)
    assert (result.registers, result.stack_frame, result.spill_stores, result.spill_loads) == (168, 8, 12, 16)
    assert result.shared_static == 1024
    assert result.notes == [
        "ptxas: (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the "
        "presence of Extern calls"
    ]


def test_a_quiet_report_gives_no_notes():
    result = CubinResult(b"elf")
    emit._parse_report(result, REPORT.replace("Potential Performance Loss", "Something else"))
    assert result.notes == []


def test_the_occupancy_examples():
    from tilelab.compiler.backends.cuda import occupancy

    failures, tries = doctest.testmod(occupancy)
    assert failures == 0 and tries > 0
