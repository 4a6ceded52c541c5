"""GPU layouts as linear maps over GF(2): hardware index bits -> tensor index bits.

from tilelab.compiler.layouts import blocked, bank_conflicts, swizzled_shared

L = blocked([128], size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[1], order=[0])
L.owner_of([[5]])        # (warp, lane, register) of element 5: lane 1, register 1
"""

from .distributed import (
    blocked,
    default_blocked,
    dot_operand,
    joined_layout,
    mma_k_width,
    mma_m16n8k16_accumulator,
    reshaped_layout,
    slice_layout,
    split_layout,
)
from .indexing import (
    broadcast_index,
    coords_of,
    flat_of,
    hardware_grid,
    needed_indices,
    permute_index,
    registers_holding,
    vector_bits,
    vector_groups,
    vector_run,
)
from .linear import LANE, OFFSET, REGISTER, WARP, LinearLayout
from .queries import (
    BankConflicts,
    bank_conflicts,
    contiguous_elements,
    conversion_kind,
    fastest_dim,
    shared_vector_width,
)
from .shared import conversion_shared, nvmma_shared, row_major_shared, swizzled_shared
from .text import parse_layout

__all__ = [
    "LinearLayout",
    "REGISTER",
    "LANE",
    "WARP",
    "OFFSET",
    "blocked",
    "default_blocked",
    "slice_layout",
    "joined_layout",
    "split_layout",
    "reshaped_layout",
    "mma_m16n8k16_accumulator",
    "dot_operand",
    "mma_k_width",
    "swizzled_shared",
    "row_major_shared",
    "nvmma_shared",
    "conversion_shared",
    "contiguous_elements",
    "fastest_dim",
    "conversion_kind",
    "shared_vector_width",
    "bank_conflicts",
    "BankConflicts",
    "parse_layout",
    "hardware_grid",
    "flat_of",
    "coords_of",
    "registers_holding",
    "needed_indices",
    "vector_run",
    "vector_groups",
    "vector_bits",
    "broadcast_index",
    "permute_index",
]
