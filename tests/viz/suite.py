"""Kernels of the shared suite (tests/kernels) and of tests/viz/kernels.py, with the types to compile them.

One entry per kind of code the views must draw: 1-D elementwise, masked tails, 2-D and 3-D tiles,
reductions, scans, block pointers, gathers, atomics, runtime loops, tensor-core dots (pipelined with
cp.async on sm_90, wgmma on sm_90a) and flash attention. Pointer arguments are ``*fp32`` unless an
entry says otherwise; scalars ``i32`` (``fp32`` when named in ``floats``).

    for case in CASES:
        compiled = compile_case(case, "cuda:sm_90")
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field

import tilelab
from tests.kernels import (
    test_atomics,
    test_attention,
    test_control_flow,
    test_elementwise,
    test_matmul,
    test_memory,
    test_reductions,
    test_scans,
    test_shapes,
)
from tests.viz import kernels as viz_kernels


@dataclass(frozen=True)
class Case:
    """A kernel, its constexpr values and the argument types that differ from the defaults."""

    name: str
    kernel: object
    constants: dict = field(default_factory=dict, hash=False)
    types: dict = field(default_factory=dict, hash=False)
    floats: tuple = ()
    num_stages: int = 3
    has_dot: bool = False

    def signature(self) -> dict[str, str]:
        params = inspect.signature(self.kernel._tilelab_fn).parameters
        sig = {}
        for name in params:
            if name in self.constants:
                continue
            default = "*fp32" if name.endswith("_ptr") or name in ("x", "y", "out", "a", "b", "c") else "i32"
            sig[name] = self.types.get(name, "fp32" if name in self.floats else default)
        return sig


_F16_DOT = {"a_ptr": "*fp16", "b_ptr": "*fp16"}
_MATMUL_CONSTS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
_GROUPED = {**_MATMUL_CONSTS, "GROUP_M": 4, "ACTIVATION": ""}

CASES = [
    Case("add", test_elementwise.add_kernel, {"BLOCK": 1024}),
    Case("add_f16", test_elementwise.add_kernel, {"BLOCK": 256}, {f"{v}_ptr": "*fp16" for v in ("x", "y", "out")}),
    Case("outer_2d", test_elementwise.outer_kernel, {"BLOCK_M": 32, "BLOCK_N": 64}),
    Case("softmax", test_reductions.softmax_kernel, {"BLOCK": 256}),
    Case("layernorm_loops", test_reductions.layernorm_fwd_kernel, {"BLOCK": 128}, floats=("eps",)),
    Case("axis_reductions", test_reductions.axis_reductions_kernel, {"BLOCK_M": 16, "BLOCK_N": 32}),
    Case("cumsum", test_scans.cumsum_cumprod_kernel, {"BLOCK": 256}, {"isum_ptr": "*i32"}),
    Case("cumsum_2d", test_scans.cumsum_2d_kernel, {"BLOCK_M": 16, "BLOCK_N": 32, "AXIS": 0}),
    Case("transpose", test_memory.transpose_kernel, {"BLOCK_M": 32, "BLOCK_N": 32}),
    Case("block_ptr_copy", test_memory.block_ptr_copy_kernel, {"BLOCK_M": 32, "BLOCK_N": 32}),
    Case("gather", test_memory.gather_kernel, {"BLOCK": 256}, {"idx_ptr": "*i32"}),
    Case(
        "histogram",
        test_atomics.histogram_kernel,
        {"NUM_BINS": 16, "BLOCK": 256},
        {"x_ptr": "*i32", "hist_ptr": "*i32"},
    ),
    Case("grid_stride", test_control_flow.grid_stride_kernel, {"BLOCK": 256}),
    Case("reshape_3d", test_shapes.reshape_permute_kernel, {"A": 2, "B": 4, "C": 8}),
    Case("matmul_f16", test_matmul.matmul_kernel, _GROUPED, _F16_DOT, has_dot=True),
    Case("matmul_f16_unpipelined", test_matmul.matmul_kernel, _GROUPED, _F16_DOT, num_stages=1, has_dot=True),
    Case("block_ptr_matmul", test_matmul.block_ptr_matmul_kernel, _MATMUL_CONSTS, _F16_DOT, has_dot=True),
    Case(
        "batched_matmul_3d_grid",
        test_matmul.batched_matmul_kernel,
        {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16},
        _F16_DOT,
        has_dot=True,
    ),
    Case(
        "batched_dot_3d_tiles",
        test_matmul.bmm_kernel,
        {"BZ": 4, "BM": 32, "BN": 32, "BK": 32, "PRECISION": "ieee"},
        _F16_DOT,
        has_dot=True,
    ),
    Case(
        "flash_attention",
        test_attention.flash_attention_fwd_kernel,
        {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True},
        {f"{v}_ptr": "*fp16" for v in "qkvo"},
        floats=("sm_scale",),
        has_dot=True,
    ),
    Case("viz_matmul", viz_kernels.matmul, {"BM": 64, "BN": 64, "BK": 32}, {"a": "*fp16", "b": "*fp16"}, has_dot=True),
    Case("viz_strided", viz_kernels.strided, {"BLOCK": 128}),
]

TARGETS = ("cuda:sm_90", "cuda:sm_90a", "cuda-ir")  # cuda-ir: the sm_90a passes, no lowering


@functools.cache
def compile_case(case: Case, target: str):
    """The compile of ``case`` for ``target`` with pass snapshots, once per test session."""
    return tilelab.compile(
        case.kernel,
        signature=case.signature(),
        constants=case.constants,
        target=target,
        num_stages=case.num_stages,
        snapshots=True,
        cache=False,
    )
