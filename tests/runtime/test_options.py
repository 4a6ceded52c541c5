"""Compile options: their defaults, the environment variables that set them, and the cache keys they make."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tilelab
from tilelab.compiler.options import DEFAULTS, NUM_STAGES, NUM_WARPS, CompileOptions, options_of
from tilelab.runtime import options as settings
from tilelab.runtime.build import options_for
from tilelab.runtime.errors import LaunchError
from tilelab.runtime.keys import Specialization

from .kernels import add

PACKAGE = Path(tilelab.__file__).parent
#: the one module allowed to read the environment (TILELAB_* variables, the CUDA toolkit's roots)
BUILDER = Path("runtime") / "options.py"


def environment_readers(root: Path) -> list[str]:
    """``file:line`` of each environment read (``environ``, ``getenv``) in the package."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root) == BUILDER:
            continue
        text = path.read_text()
        for match in re.finditer(r"\b(environ|getenv)\b", text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(root)}:{line}")
    return found


def test_only_the_options_builder_reads_environment_variables():
    assert environment_readers(PACKAGE) == []


def test_the_check_finds_a_reader(tmp_path):
    """The check above can fail: a variable read outside the builder, even by a name built elsewhere, is found."""
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "options.py").write_text('os.environ.get("TILELAB_TARGET")\n')
    (tmp_path / "pass.py").write_text('import os\nNAME = "TILELAB_CUDA_WGMMA"\non = os.getenv(NAME) != "0"\n')
    assert environment_readers(tmp_path) == ["pass.py:3"]


def test_defaults_are_written_once():
    options = CompileOptions()
    assert (options.num_warps, options.num_stages) == (NUM_WARPS, NUM_STAGES) == (4, 3)
    assert options.wgmma and options.ldmatrix and not options.debug and options.arch is None
    assert options_of(object()) is DEFAULTS


def test_options_are_frozen_and_hashable():
    options = CompileOptions(target="cuda", arch="sm_90a")
    with pytest.raises(AttributeError):
        options.num_warps = 8
    assert {options: 1}[CompileOptions(target="cuda", arch="sm_90a")] == 1
    assert options.replace(num_warps=8).num_warps == 8 and options.num_warps == 4


def test_key_round_trips():
    options = CompileOptions(target="cuda", arch="sm_80", num_warps=8, tools=(("ptxas", "/opt/ptxas"),))
    assert CompileOptions.from_key(options.key()) == options
    assert options.tool("ptxas") == "/opt/ptxas" and options.tool("nvdisasm") is None


@pytest.mark.parametrize(
    "variable, value, field, expected",
    [
        ("TILELAB_CUDA_WGMMA", "0", "wgmma", False),
        ("TILELAB_CUDA_WGMMA", "1", "wgmma", True),
        ("TILELAB_CUDA_LDMATRIX", "0", "ldmatrix", False),
        ("TILELAB_CUDA_FP_FUSION", "1", "fp_fusion", True),
        ("TILELAB_CUDA_FP_FUSION", "0", "fp_fusion", False),
        ("TILELAB_LIBDEVICE", "/opt/libdevice.10.bc", "libdevice", "/opt/libdevice.10.bc"),
        ("TILELAB_PTXAS", "/opt/bin/ptxas", "tools", (("ptxas", "/opt/bin/ptxas"),)),
    ],
)
def test_environment_sets_compile_options(monkeypatch, variable, value, field, expected):
    monkeypatch.setenv(variable, value)
    assert getattr(settings.compile_options("cuda"), field) == expected


def test_target_name_gives_target_and_arch():
    options = settings.compile_options("cuda:sm_80", num_warps=8, num_stages=2, debug=True)
    assert (options.target, options.arch, options.num_warps, options.num_stages, options.debug) == (
        "cuda:sm_80",
        "sm_80",
        8,
        2,
        True,
    )
    assert options_for("cuda:sm_80").arch == "sm_80" and options_for("interpret").arch is None


def test_runtime_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELAB_NUM_THREADS", "3")
    monkeypatch.setenv("TILELAB_TIERED", "0")
    monkeypatch.setenv("TILELAB_PREFETCH", "0")
    monkeypatch.setenv("TILELAB_SANITIZE", "1")
    monkeypatch.setenv("TILELAB_TARGET", "interpret")
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    assert settings.num_threads() == 3 and not settings.tiered() and not settings.prefetch_enabled()
    assert settings.sanitize_default() and settings.target_override() == "interpret"
    assert settings.cache_dir() == tmp_path
    assert settings.launch_environment() == (b"interpret", b"1") or settings.launch_environment() == ("interpret", "1")
    monkeypatch.setenv("TILELAB_SANITIZE", "0")
    monkeypatch.delenv("TILELAB_TARGET")
    assert not settings.sanitize_default() and settings.target_override() is None


def key_of(options: CompileOptions) -> str:
    return Specialization.of({"x": "*f32", "n": "i32"}, {"BLOCK": 128}, {"x": 16, "n": 1}, options).digest(add.fn)


@pytest.mark.parametrize(
    "change",
    [
        {"num_warps": 8},
        {"num_stages": 2},
        {"wgmma": False},
        {"ldmatrix": False},
        {"fp_fusion": False},
        {"arch": "sm_80"},
        {"debug": True},
        {"maxnreg": 32},
    ],
)
def test_every_option_changes_the_cache_key(change):
    base = CompileOptions(target="cuda", arch="sm_90a")
    assert key_of(base.replace(**change)) != key_of(base)
    assert key_of(base.replace(**change)) == key_of(base.replace(**change))


SIG = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


def test_wgmma_off_is_a_different_cache_entry(monkeypatch, tmp_path):
    """The switch goes into the options, so into the key: the same kernel compiles again, not from the cache."""
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    first = tilelab.compile(add, SIG, {"BLOCK": 128}, target="cuda:sm_90a")
    again = tilelab.compile(add, SIG, {"BLOCK": 128}, target="cuda:sm_90a")
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "0")
    switched = tilelab.compile(add, SIG, {"BLOCK": 128}, target="cuda:sm_90a")
    assert not first.from_cache and again.from_cache and not switched.from_cache
    assert first.options.wgmma and not switched.options.wgmma


def test_launch_options_reach_the_passes(rng):
    """``num_warps`` given at launch is the module's option that the GPU passes read."""
    x = rng.standard_normal(100).astype(np.float32)
    out = np.full_like(x, np.nan)
    ck = tilelab.jit(add.fn)[(1,)](x, x, out, 100, BLOCK=128, num_warps=2, target="interpret")
    np.testing.assert_allclose(out, 2 * x)
    assert ck.options.num_warps == 2 and ck.module.options is ck.options
    cuda = tilelab.compile(add, SIG, {"BLOCK": 128}, target="cuda:sm_80", num_warps=2)
    assert options_of(cuda.module).num_warps == 2 and cuda.metadata["num_warps"] == 2
    assert "maxntidx" in cuda.asm["llir"] or ".maxntid 64" in cuda.asm["ptx"]


def test_maxnreg_caps_the_registers_of_a_cuda_kernel(rng):
    """Triton's ``maxnreg``: a launch option on every target (the CPU's compile is the same), ``.maxnreg`` in CUDA's."""
    x = rng.standard_normal(100).astype(np.float32)
    out = np.full_like(x, np.nan)
    ck = tilelab.jit(add.fn)[(1,)](x, x, out, 100, BLOCK=128, maxnreg=40, target="cpu")
    np.testing.assert_allclose(out, 2 * x)
    assert ck.options.maxnreg is None  # no registers to cap: the same compile (and cache entry) as without
    capped = tilelab.compile(add, SIG, {"BLOCK": 4096}, target="cuda:sm_90a", num_warps=4, maxnreg=24, cache=False)
    free = tilelab.compile(add, SIG, {"BLOCK": 4096}, target="cuda:sm_90a", num_warps=4, cache=False)
    assert ".maxnreg 24" in capped.asm["ptx"] and ".maxnreg" not in free.asm["ptx"]
    if capped.metadata.get("registers") is not None:  # ptxas ran
        assert capped.metadata["registers"] <= 24 < free.metadata["registers"]


@pytest.mark.parametrize("bad", [0, -8, 32.0, "32", True])
def test_a_bad_maxnreg_is_a_launch_error_naming_it(bad):
    x = np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match="maxnreg must be a positive int"):
        tilelab.jit(add.fn)[(1,)](x, x, x, 8, BLOCK=8, maxnreg=bad, target="interpret")
