"""The resources of a gfx942 kernel, read from its assembly: VGPRs, SGPRs, AGPRs, LDS, scratch.

The AMDGPU code generator ends the assembly with the code object's metadata (YAML between
``.amdgpu_metadata`` and ``.end_amdgpu_metadata``); per kernel it says::

    .agpr_count:     0
    .group_segment_fixed_size: 1024
    .private_segment_fixed_size: 0
    .sgpr_count:     14
    .vgpr_count:     8
    .wavefront_size: 64

``kernel_resources`` reads those keys (a few regular expressions: no YAML parser needed) for
the kernel named ``name``: registers are per lane, as ptxas's ``Used N registers`` is per thread.
"""

from __future__ import annotations

import re

_FIELDS = {
    "vgprs": "vgpr_count",
    "sgprs": "sgpr_count",
    "agprs": "agpr_count",
    "lds": "group_segment_fixed_size",
    "scratch": "private_segment_fixed_size",
    "vgpr_spills": "vgpr_spill_count",
    "sgpr_spills": "sgpr_spill_count",
    "wavefront_size": "wavefront_size",
}


def _kernel_block(text: str, name: str) -> str:
    """The metadata entries of kernel ``name`` (from its ``.name:`` back to the previous kernel's end)."""
    meta = text.partition(".amdgpu_metadata")[2].partition(".end_amdgpu_metadata")[0]
    blocks = re.split(r"\n  - ", meta)
    for block in blocks:
        if re.search(rf"^\s*\.name:\s+{re.escape(name)}\s*$", block, re.M):
            return block
    return meta


def kernel_resources(text: str, name: str) -> dict:
    """``{"vgprs": 8, "sgprs": 14, "agprs": 0, "lds": 1024, ...}`` of kernel ``name`` (the keys found)."""
    block = _kernel_block(text, name)
    out = {}
    for key, field in _FIELDS.items():
        m = re.search(rf"^\s*\.{field}:\s+(\d+)\s*$", block, re.M)
        if m:
            out[key] = int(m.group(1))
    return out


__all__ = ["kernel_resources"]
