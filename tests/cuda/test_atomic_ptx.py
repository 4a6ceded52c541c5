"""Atomics in PTX: the op's ordering and scope spelled out, ``red`` where nothing reads the old values,
float adds several elements at a time where the addresses allow (sm_90: 4 f32, 8 f16 or bf16), LLVM's
``cmpxchg`` loop where PTX has no op.

LLVM 22's NVPTX back end turns every ``atomicrmw`` into a relaxed, device-scope ``atom`` whatever its
ordering and scope; Triton's ``tl.atomic_*`` default to ``acq_rel`` at ``gpu`` scope, and a ``release``
exchange is how a kernel publishes what it wrote before (a lock's release).
"""

from __future__ import annotations

import re

import pytest

import tilelab
import tilelab.language as tl


@tilelab.jit
def exchange_kernel(flag, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_xchg(flag, 1, sem=SEM, scope=SCOPE)


@tilelab.jit
def claim_kernel(flag, out, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(out, tl.atomic_cas(flag, 0, 1, sem=SEM, scope=SCOPE))


@tilelab.jit
def add_tile_kernel(x, out, old, n, BLOCK: tl.constexpr, SEM: tl.constexpr, KEEP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    prev = tl.atomic_add(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n, sem=SEM)
    if KEEP:
        tl.store(old + offs, prev, mask=offs < n)


@tilelab.jit
def rmw_kernel(x, out, KIND: tl.constexpr):
    offs = tl.arange(0, 128)
    v = tl.load(x + offs)
    if KIND == "max":
        tl.atomic_max(out + offs, v)
    elif KIND == "min":
        tl.atomic_min(out + offs, v)
    elif KIND == "and":
        tl.atomic_and(out + offs, v)
    else:
        tl.atomic_add(out + offs, v)


def ptx_of(kernel, signature, constants, arch="sm_90a", **kw):
    ck = tilelab.compile(kernel, signature, constants, target=f"cuda:{arch}", cache=False, snapshots=False, **kw)
    return ck.asm["ptx"]


def atomics(ptx: str) -> list[str]:
    """The atomic instructions of ``ptx``, predicate and operands dropped."""
    return re.findall(r"\b((?:atom|red)\.[a-z0-9_.]+)", ptx)


@pytest.mark.parametrize("sem", ["relaxed", "acquire", "release", "acq_rel"])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys"])
def test_exchange_and_cas_spell_their_ordering_and_scope(sem, scope):
    consts = {"SEM": sem, "SCOPE": scope}
    assert atomics(ptx_of(exchange_kernel, {"flag": "*i32"}, consts)) == [f"atom.{sem}.{scope}.global.exch.b32"]
    cas = atomics(ptx_of(claim_kernel, {"flag": "*i32", "out": "*i32"}, consts))
    assert cas == [f"atom.{sem}.{scope}.global.cas.b32"]


ADD_SIG = {"x": "*fp32", "out": "*fp32", "old": "*fp32", "n": "i32"}


@pytest.mark.parametrize(
    ("sem", "keep", "expected"),
    [
        ("acq_rel", True, "atom.acq_rel.gpu.global.add.v4.f32"),
        ("acq_rel", False, "atom.acq_rel.gpu.global.add.v4.f32"),  # red has no acquire
        ("release", False, "red.release.gpu.global.add.v4.f32"),
        ("relaxed", False, "red.relaxed.gpu.global.add.v4.f32"),
        ("relaxed", True, "atom.relaxed.gpu.global.add.v4.f32"),
    ],
)
def test_f32_adds_go_four_at_a_time_and_reduce_when_unread(sem, keep, expected):
    consts = {"BLOCK": 512, "SEM": sem, "KEEP": keep}
    found = set(atomics(ptx_of(add_tile_kernel, ADD_SIG, consts, divisibility={"n": 16})))
    assert found == {expected}


@pytest.mark.parametrize("element", ["fp16", "bf16"])
@pytest.mark.parametrize("keep, op", [(False, "red.relaxed"), (True, "atom.relaxed")])
def test_16_bit_float_adds_go_eight_at_a_time(element, keep, op):
    """Alone, a 16-bit float add has no instruction (ptxas loops on a compare-and-swap of its word); sm_90 adds
    vectors of them, as Triton does: 8 a thread where 1,024 elements spread over 4 warps, 4 over 8 warps."""
    sig = {"x": f"*{element}", "out": f"*{element}", "old": f"*{element}", "n": "i32"}
    for warps, vec in ((4, 8), (8, 4)):
        consts = {"BLOCK": 1024, "SEM": "relaxed", "KEEP": keep}
        found = set(atomics(ptx_of(add_tile_kernel, sig, consts, num_warps=warps, divisibility={"n": 16})))
        assert found == {f"{op}.gpu.global.add.noftz.v{vec}.{element.replace('fp', 'f')}"}


def test_bf16_adds_before_sm_90_are_a_compare_and_swap_loop():
    """sm_80 has no bf16 atomic add; the add runs in f32 inside a compare-and-swap loop on the bits (LLVM's own
    float ``atomicrmw`` does not take a type held as bits: this was an internal compiler error)."""
    sig = {"x": "*bf16", "out": "*bf16", "old": "*bf16", "n": "i32"}
    consts = {"BLOCK": 256, "SEM": "acq_rel", "KEEP": True}
    ck = tilelab.compile(add_tile_kernel, sig, consts, target="cuda:sm_80", cache=False, snapshots=False)
    assert {a.split(".")[-1] for a in atomics(ck.asm["ptx"])} <= {"b32", "b16"}
    assert "cas" in "".join(atomics(ck.asm["ptx"])) and ck.metadata["registers"]


def test_a_ragged_mask_or_an_older_gpu_adds_one_element_at_a_time():
    consts = {"BLOCK": 512, "SEM": "acq_rel", "KEEP": False}
    ragged = set(atomics(ptx_of(add_tile_kernel, ADD_SIG, consts, divisibility={"n": 1})))
    assert ragged == {"atom.acq_rel.gpu.global.add.f32"}  # n odd: the mask may change inside 4 elements
    older = set(atomics(ptx_of(add_tile_kernel, ADD_SIG, consts, arch="sm_80", divisibility={"n": 16})))
    assert older == {"atom.acq_rel.gpu.global.add.f32"}


@pytest.mark.parametrize(
    ("element", "kind", "expected"),
    [
        ("i32", "add", "atom.acq_rel.gpu.global.add.u32"),
        ("i64", "add", "atom.acq_rel.gpu.global.add.u64"),
        ("u32", "max", "atom.acq_rel.gpu.global.max.u32"),
        ("i64", "min", "atom.acq_rel.gpu.global.min.s64"),
        ("i32", "and", "atom.acq_rel.gpu.global.and.b32"),
        ("fp16", "add", "atom.acq_rel.gpu.global.add.noftz.f16"),
        ("bf16", "add", "atom.acq_rel.gpu.global.add.noftz.bf16"),
    ],
)
def test_each_element_type_takes_its_ptx_op(element, kind, expected):
    found = set(atomics(ptx_of(rmw_kernel, {"x": f"*{element}", "out": f"*{element}"}, {"KIND": kind})))
    assert found == {expected}


def test_float_max_is_a_compare_and_swap_loop_in_its_ordering():
    found = set(atomics(ptx_of(rmw_kernel, {"x": "*fp32", "out": "*fp32"}, {"KIND": "max"})))
    assert found and all(".cas." in a and ".acq_rel." in a for a in found), found
