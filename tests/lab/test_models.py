"""The inspector's view models: line info, diffs, pass filters, source links, resources."""

import random

import pytest

from tests.lab.fake import FIRST_LINE, make_compiled, make_llir
from tilelab.viz.highlight import highlight_lines
from tilelab.viz.models import code_lines, diff_rows, line_info, pass_rows, search_lines, source_model
from tilelab.viz.resources import estimate_occupancy, resource_rows


def test_tile_ir_lines_carry_their_source_line():
    ck = make_compiled()
    lines = code_lines(ck.asm["tile"], "tile")
    assert lines[0].src_line is None  # tt.func header has no loc here
    assert [c.src_line for c in lines[1:-1]] == [FIRST_LINE + k for k in (1, 2, 2, 3, 4, 4, 4, 4)]


def test_llvm_ir_line_info_follows_dbg_metadata():
    info = line_info(make_llir(), "llir")
    assert info[:4] == [None, FIRST_LINE + 1, FIRST_LINE + 2, None]


def test_asm_line_info_follows_loc_directives():
    text = ".loc 1 12 0\nmov r1, r2\n\nadd r1, r1\n.loc 1 14 2\nret\n"
    assert line_info(text, "ptx") == [None, 12, None, 12, None, 14]
    sass = '//## File "add.py", line 7\n  IMAD R1, R2, R3 ;\n'
    assert line_info(sass, "sass") == [None, 7]


def test_source_links_both_ways():
    ck = make_compiled()
    src, lines = source_model(ck), code_lines(ck.asm["tile"], "tile")
    assert src.filename == "add.py" and src.numbers[0] == FIRST_LINE
    linked = src.code_for_line(lines, FIRST_LINE + 4)
    assert len(linked) == 4 and all("tt." in lines[i].text or "arith" in lines[i].text for i in linked)
    assert src.line_for_code(lines, linked[0]) == FIRST_LINE + 4
    assert src.line_for_code(lines, 0) is None  # header line: no location
    assert src.line_for_code(lines, 999) is None


def test_diff_marks_removed_and_added_lines():
    rng = random.Random()
    a = [f"line {rng.randrange(10**6)}" for _ in range(8)]
    b = a[:3] + ["new"] + a[5:]
    rows = diff_rows("\n".join(a), "\n".join(b))
    assert [r.text for r in rows if r.kind == "del"] == a[3:5]
    assert [(r.text, r.new_no) for r in rows if r.kind == "add"] == [("new", 4)]
    assert sum(r.kind == "same" for r in rows) == 6


def test_diff_folds_far_context():
    a = [f"l{i}" for i in range(30)]
    b = a[:15] + ["x"] + a[16:]
    rows = diff_rows("\n".join(a), "\n".join(b), context=2)
    assert [r.kind for r in rows] == ["skip", "same", "same", "del", "add", "same", "same", "skip"]


def test_diff_of_missing_snapshot_is_empty():
    assert diff_rows(None, None) == []


def test_pass_filter_and_search():
    ck = make_compiled()
    assert [r.name for r in pass_rows(ck.passes)] == ["inline", "cse", "dce"]
    assert [r.name for r in pass_rows(ck.passes, hide_unchanged=True)] == ["cse"]
    assert [r.name for r in pass_rows(ck.passes, query="DC")] == ["dce"]
    assert len(pass_rows(ck.passes, query="tt.store")) == 3  # the query also searches the IR
    assert pass_rows(ck.passes, query="no-such-thing") == []
    assert "changed" in pass_rows(ck.passes)[1].label


def test_search_lines():
    lines = code_lines(make_llir(), "llir")
    assert search_lines(lines, "MUL") == [2]
    assert search_lines(lines, "  ") == []


def test_highlight_lines_are_balanced_per_line():
    src = make_compiled().source
    out = highlight_lines(src + '    s = """a\nb"""\n', "python")
    assert len(out) == len(src.splitlines()) + 2
    assert all(line.count("<span") == line.count("</span>") for line in out)


@pytest.mark.parametrize(
    "regs, shared, warps, blocks, limiter",
    [(32, 0, 4, 16, "warps"), (128, 0, 4, 4, "registers"), (32, 100 * 1024, 4, 2, "shared memory")],
)
def test_occupancy_estimate(regs, shared, warps, blocks, limiter):
    occ = estimate_occupancy(regs, shared, warps, arch=90)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)


def test_resource_rows_cuda_has_occupancy_cpu_not():
    cuda = dict(resource_rows(make_compiled(target="cuda:sm_80")))
    assert "estimated occupancy" in cuda and cuda["registers / thread"] == "40"
    cpu = dict(resource_rows(make_compiled()))
    assert "estimated occupancy" not in cpu and cpu["compile time"].endswith("ms")


def test_resource_rows_split_the_compile_time_by_stage():
    compiled = make_compiled(target="cuda:sm_80")
    compiled.metadata.update(compile_seconds=0.25, stage_seconds={"frontend": 0.002, "llvm": 0.1, "ptxas": 0.09})
    assert dict(resource_rows(compiled))["compile time"] == "250.0 ms (frontend 2, llvm 100, ptxas 90)"


def test_locations_say_cell_line_or_the_file_name():
    from tilelab.viz.models import code_lines, diff_rows

    line = rng_line = random.randint(2, 99)
    text = f'%0 = tt.get_program_id {{axis = 0}} : i32 loc("/tmp/ipykernel_1/1078421621.py":{line}:11)\n'
    assert code_lines(text, "tile")[0].text.endswith(f"loc(cell line {rng_line})")
    assert code_lines(text, "tile")[0].src_line == line
    assert all('"/tmp' not in r.text for r in diff_rows(text, text))
    in_file = text.replace("/tmp/ipykernel_1/1078421621.py", "/home/me/kernels/add.py")
    assert code_lines(in_file, "tile")[0].text.endswith(f"loc(add.py line {line})")
