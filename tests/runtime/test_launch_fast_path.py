"""The warm-launch shortcut (call keys), lazy assembly texts and the CPU argument packing."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tilelab.runtime.keys import call_key
from tilelab.runtime.texts import LazyTexts, merged, ready_texts

from .kernels import add, scale


def fresh(kernel):
    return tilelab.jit(kernel.fn)


def launch_add(kernel, rng, n, block=32, target="interpret", offset=0):
    x, y = (rng.standard_normal(n + offset).astype(np.float32)[offset:] for _ in range(2))
    out = np.full_like(x, np.nan)
    kernel[(tilelab.cdiv(n, block),)](x, y, out, n, BLOCK=block, target=target)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_same_call_key_reuses_the_kernel_without_building(rng, builds):
    kernel = fresh(add)
    launch_add(kernel, rng, 64)
    launch_add(kernel, rng, 96)  # also a multiple of 16: same specialization
    assert len(builds) == 1 and len(kernel.kernels) == 1 and len(kernel.launches) == 1


@pytest.mark.parametrize(
    "first, second",
    [
        (dict(n=64), dict(n=100)),  # divisibility of n changes
        (dict(n=64), dict(n=64, block=64)),  # constexpr value changes
        (dict(n=64), dict(n=64, offset=1)),  # array alignment changes
    ],
)
def test_a_different_specialization_is_never_served_by_the_shortcut(rng, builds, first, second):
    kernel = fresh(add)
    launch_add(kernel, rng, **first)
    launch_add(kernel, rng, **second)
    assert len(builds) == 2


def test_call_keys_separate_what_specialization_separates(rng):
    x = rng.standard_normal(8).astype(np.float32)

    def key(x=x, n=32, B=4):
        return call_key((x, n), {"B": B, "target": "cpu"}, (False, False, True), {"B", "target"})

    assert key() == key(n=48)
    assert key() != key(n=1) != key(n=33) != key(n=2**40)
    assert key(B=0.0) != key(B=-0.0) and key(B=1) != key(B=True) != key(B=1.0)
    assert key(x=x.astype(np.float64)) != key()
    assert key(x=object()) is None  # no shortcut: the full path reports it


def test_errors_still_name_the_argument_after_a_warm_launch(rng):
    kernel = fresh(scale)
    x = rng.standard_normal(64).astype(np.float32)
    out = np.empty_like(x)
    kernel[(2,)](x, out, 64, 2.0, 1, BLOCK=32, target="cpu")
    np.testing.assert_allclose(out, 2.0 * x, rtol=1e-6)
    with pytest.raises(tilelab.LaunchError, match="argument 'x'.*array of f32, got an array of float64"):
        kernel.warmup(x, out, 64, 2.0, 1, BLOCK=32, target="cpu", grid=(2,))[(2,)](x.astype(np.float64), out, 64, 2.0)


def test_cpu_packing_wraps_ints_and_rounds_floats_like_numpy(rng):
    kernel = fresh(scale)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.full_like(x, np.nan)
    alpha = float(rng.standard_normal())
    kernel[(4,)](x, out, 100, alpha, 1, BLOCK=32, target="cpu")
    np.testing.assert_array_equal(out, x * np.float32(alpha))


def test_assembly_is_emitted_on_first_access_and_after_a_disk_reload(rng):
    kernel = fresh(add)
    x = rng.standard_normal(64).astype(np.float32)
    ck = kernel.warmup(x, x, x, 64, BLOCK=32, target="cpu")
    assert "asm" in ck.asm and not ck.asm.is_ready("asm")
    assert "add_grid" in ck.asm["asm"] and ck.asm.is_ready("asm")
    reloaded = fresh(add).warmup(x, x, x, 64, BLOCK=32, target="cpu")
    assert reloaded.from_cache and set(reloaded.asm) == set(ck.asm)
    assert reloaded.asm["asm"] == ck.asm["asm"]


def test_lazy_texts_run_each_maker_once_and_store_only_ready_texts():
    calls = []
    texts = LazyTexts({"llir": "ir"}, {"asm": lambda: calls.append(1) or "text"})
    both = merged({"tile": "t"}, texts)
    assert sorted(both) == ["asm", "llir", "tile"] and len(both) == 3
    assert ready_texts(both) == {"tile": "t", "llir": "ir"} and not calls
    assert both["asm"] == both["asm"] == "text" and calls == [1]
    with pytest.raises(KeyError):
        both["ptx"]
