"""Copies narrower than a run of contiguous addresses take each address as the run's first plus a constant.

The axis analysis proves which registers' addresses follow one another; where the copy to shared memory is
split narrower (a K-major shared operand copied 4 bytes at a time), the lowering rebuilds the later addresses
of a run from its first instead of each from an offset of its own. No GPU needed.
"""

import re

import tilelab
import tilelab.language as tl
from tests.cuda.test_tensor_core_types import SIG, tc_matmul_kernel
from tests.support.llvm_ir import lowered_ir


def _lowered(kernel, sig, consts, div, num_warps=4, num_stages=3):
    ck = tilelab.compile(kernel, sig, consts, target="cuda:sm_90a", num_warps=num_warps, num_stages=num_stages,
                         divisibility=div, cache=False, snapshots=False)  # fmt: skip
    return lowered_ir(ck)


def _matmul_ir(stride_bn):
    """The tutorial's matmul on f32 tiles (a tf32 wgmma), B row-major: ``stride_bn`` 1 (a contiguous tensor's
    unit stride, specialized as a launch does) or None (a runtime stride: no contiguity to prove)."""
    sig, consts = dict(SIG), {"BM": 128, "BN": 128, "BK": 32, "ACC": tl.float32, "PRECISION": "tf32"}
    consts |= {"stride_ak": 1, "stride_cn": 1}
    if stride_bn is None:
        sig["stride_bn"] = "i32"
    else:
        consts["stride_bn"] = stride_bn
    return _lowered(tc_matmul_kernel, sig, consts, {n: 16 for n in sig})


def _sources(text, copy):
    """The global address operand of each ``copy`` inline-PTX call, and the defining line of each value."""
    defs = dict(re.findall(r"^\s+(%\S+) = (.*)$", text, re.M))
    srcs = re.findall(copy + r'.*?ptr addrspace\(1\) (%"?[\w.]+"?)', text)
    return srcs, defs


def test_a_k_major_tf32_operand_copied_4_bytes_at_a_time_steps_from_each_run_first():
    srcs, defs = _sources(_matmul_ir(stride_bn=1), r'"cp\.async\.ca\.shared\.global \[\$0\], \[\$1\], 4')
    assert srcs
    stepped = [s for s in srcs if re.match(r"getelementptr \w+, ptr addrspace\(1\) %\S+, i32 [123] ", defs[s])]
    assert len(stepped) * 4 == len(srcs) * 3  # B's rows of 4 contiguous floats: the first of each its own


def test_negative_a_runtime_stride_proves_no_run():
    srcs, defs = _sources(_matmul_ir(stride_bn=None), r'"cp\.async\.ca\.shared\.global \[\$0\], \[\$1\], 4')
    assert srcs
    assert not [s for s in srcs if re.search(r", i32 [123] ", defs[s])]
