"""The model numbers the Nsight Compute check compares, for tilelab's own CUDA code (PTX only, no GPU).

Hand-computed: f32 v4 unit-stride requests take 32 lanes x 16 B / 32 B = 16 sectors; a scalar
stride-2 or column load puts every lane in its own sector (32). The 64x64 transpose stores each
thread's 32 registers at their row-major index as 8 16-byte vectors (8 lanes fill each 128-byte
phase: 4 wavefronts, the ideal) and reads them back one element at a time down columns (16 rows
256 B apart in one bank, twice: 16 wavefronts, 15 conflicts).
"""

import importlib.util
import pathlib
import sys

import pytest

from tilelab.compiler.analysis.memory_access import shared_round_trips, wavefronts

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "ncu_check.py"


@pytest.fixture(scope="module")
def ncu_check():
    spec = importlib.util.spec_from_file_location("ncu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ncu_check"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("ncu_check", None)


@pytest.mark.parametrize(
    "name, ld, st",
    [("copy", (16, 2), (16, 2)), ("stride2", (32, 8), (16, 2)), ("column", (32, 8), (16, 2))],
)
def test_global_sectors_per_request(ncu_check, name, ld, st):
    case = ncu_check.CASES[name]
    numbers = ncu_check.model_numbers(case)
    for kind, (per_request, per_thread) in (("ld", ld), ("st", st)):
        sectors, requests = numbers[kind]
        assert requests == case.programs * 4 * per_thread  # 4 warps, per_thread instructions each
        assert sectors == requests * per_request
    assert numbers["shared_ld"] == numbers["shared_st"] == 0


def test_transpose_shared_round_trip_matches_the_ptx(ncu_check):
    compiled = ncu_check.compile_case(ncu_check.CASES["transpose"])
    ptx = compiled.asm["ptx"]
    trips = shared_round_trips(compiled.module, 4)
    assert ptx.count("st.shared") == sum(t.stores.shape[1] for t in trips)
    assert ptx.count("ld.shared") == sum(t.loads.shape[1] for t in trips)
    # the trans is split into a free permutation and one conversion through a swizzled buffer
    (buffer,) = [t for t in trips if t.op.name == "ttg.local_alloc"]
    assert ptx.count("ld.shared.v4.b32") == buffer.loads.shape[1] == 8
    assert buffer.stores.shape == (4, 32) and buffer.loads.shape == (4, 8)
    assert (buffer.stores == 2).all() and (buffer.loads == 4).all()  # scalar stores 2-way; 16-byte loads ideal
    assert (buffer.conflicts("st"), buffer.conflicts("ld")) == (4 * 32 * 1, 0)


def test_transpose_whole_kernel_totals(ncu_check):
    case = ncu_check.CASES["transpose"]
    numbers = ncu_check.model_numbers(case)
    assert numbers["ld"][0] == numbers["ld"][1] * 16 and numbers["st"][0] == numbers["st"][1] * 16
    # the trans's buffer (above) alone: the index vectors are recomputed in each layout (rematerialize)
    assert (numbers["shared_st"], numbers["shared_ld"]) == (case.programs * 4 * 32, 0)


def test_wavefronts_on_random_addresses(rng):
    words = rng.integers(0, 1 << 12, size=32)
    expected = max(len({w for w in words if w % 32 == b}) for b in range(32))
    assert wavefronts(words * 4, 4) == expected


def test_script_imports_without_widgets(ncu_check, monkeypatch):
    import tilelab

    if hasattr(tilelab, "viz"):  # a fresh import rebinds ``tilelab.viz``: the original comes back afterwards
        monkeypatch.setattr(tilelab, "viz", tilelab.viz)
    before = set(sys.modules)
    for name in [m for m in sys.modules if m.startswith(("ipywidgets", "tilelab.viz"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    try:
        assert ncu_check.model_numbers(ncu_check.CASES["copy"])["ld"][1] > 0
    finally:  # modules first imported here would otherwise outlive the test, bound to the fresh copies
        for name in set(sys.modules) - before:
            if name.startswith(("ipywidgets", "tilelab.viz")):
                del sys.modules[name]


def test_parse_csv_sums_launches(ncu_check):
    text = 'noise\n"ID","Metric Name","Metric Unit","Metric Value"\n"0","m","","1,024"\n"1","m","","6"\n'
    assert ncu_check.parse_csv(text) == {"m": 1030.0}
