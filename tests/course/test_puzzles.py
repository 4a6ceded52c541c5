"""Every puzzle's reference solution passes its checker; the checker names what a wrong kernel does wrong."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
import tilelab.puzzles as puzzles
from tilelab.puzzles import solutions


@pytest.mark.parametrize("target", ["interpret", "cpu"])
@pytest.mark.parametrize("name", puzzles.names())
def test_solution_passes(name, target):
    verdict = puzzles.check(getattr(solutions, name), target=target)
    assert verdict.passed, verdict.message
    assert verdict.message.startswith(f"PASS {name}: 3 random cases")


def test_there_are_at_least_twelve_puzzles_from_easy_to_hard():
    levels = [puzzles.get(n).level for n in puzzles.names()]
    assert len(levels) >= 12 and levels == sorted(levels) and levels[0] == 1 and levels[-1] >= 5


@tilelab.jit
def off_by_one(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + 1.0, mask=mask)


def test_wrong_values_are_listed_with_index_expected_and_got():
    verdict = puzzles.check("copy", off_by_one, seed=7)
    assert not verdict.passed
    lines = verdict.message.splitlines()
    n = int(lines[0].split("n=")[1].split(")")[0])
    assert f"out: {n} of {n} elements are wrong:" in lines[0]
    rng = np.random.default_rng(7)
    x = puzzles.get("copy").make(rng).args["x"]
    assert lines[1] == f"  out[0]: expected {x[0]:.6g}, got {x[0] + 1:.6g}"
    assert lines[-1] == f"  ... and {n - 5} more"


@tilelab.jit
def copy(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))  # no mask: the last block runs past n


def test_out_of_bounds_access_names_the_kernel_line():
    verdict = puzzles.check(copy)
    assert not verdict.passed
    assert "the kernel faulted" in verdict.message and "out-of-bounds load" in verdict.message
    assert "test_puzzles.py:" in verdict.message
    assert "tl.store(out + offs, tl.load(x + offs))" in verdict.message


@tilelab.jit
def first_block_only(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # forgets program_id: every program writes block 0
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask), mask=mask)


def test_unwritten_outputs_are_detected_with_where():
    verdict = puzzles.check("copy", first_block_only, seed=3)
    assert not verdict.passed
    n = puzzles.get("copy").make(np.random.default_rng(3)).args["n"]
    assert f"out: {n - 128} of {n} elements were never written (at [128], [129]," in verdict.message
    assert "do the grid and the mask cover every element?" in verdict.message


@tilelab.jit
def histogram(x, counts, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x + offs, mask=mask, other=0)
    tl.store(counts + bins, tl.full([BLOCK], 1, tl.int32), mask=mask)  # a store, not an atomic add


def test_lost_updates_show_as_wrong_counts():
    verdict = puzzles.check(histogram)
    assert not verdict.passed and "counts:" in verdict.message and "expected" in verdict.message


def test_compile_error_names_the_line():
    def copy(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK) + tl.arange(0, 64)
        tl.store(out + offs, tl.load(x + offs))

    verdict = puzzles.check(copy)
    assert "the kernel does not compile:" in verdict.message
    assert "offs = tl.arange(0, BLOCK) + tl.arange(0, 64)" in verdict.message


def test_wrong_parameters_are_reported():
    def axpy(x, y, out, n, BLOCK: tl.constexpr):
        pass

    message = puzzles.check(axpy).message
    assert "the kernel takes (x, y, out, n, BLOCK) but the puzzle calls it with (a, x, y, out, n" in message

    def flip(x, out, n):
        pass

    assert "needs the constexpr parameter(s) BLOCK" in puzzles.check(flip).message


def test_unknown_puzzle_and_strict_mode():
    def nonesuch(x):
        pass

    with pytest.raises(KeyError, match="no puzzle named 'nonesuch'"):
        puzzles.check(nonesuch)
    with pytest.raises(puzzles.PuzzleFailed, match="FAIL copy"):
        puzzles.check("copy", off_by_one, strict=True)


def test_poison_marks_only_untouched_elements():
    for dtype in (np.float16, np.float32, np.float64, np.int32):
        arr = puzzles.poison(np.empty(8, dtype))
        arr[3] = np.nan if arr.dtype.kind == "f" else 0
        assert puzzles.poisoned(arr).tolist() == [True] * 3 + [False] + [True] * 4
