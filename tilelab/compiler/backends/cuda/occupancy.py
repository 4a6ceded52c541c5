"""How many programs (thread blocks) of a kernel fit on one SM: the CUDA occupancy calculator's arithmetic.

Registers, shared memory and warps each allow some number of programs per SM; the fewest wins.
Registers are allocated per warp in units of 256, so 33 and 40 registers a thread cost the same::

    >>> estimate_occupancy(registers=40, shared=0, num_warps=8, arch=90)
    Occupancy(blocks_per_sm=6, active_warps=48, max_warps=64, limiter='registers')
    >>> estimate_occupancy(registers=32, shared=0, num_warps=8, arch=90).occupancy
    1.0

The Resources view shows it; ``ptx_order`` keeps a reordering of a kernel's PTX only where the
registers it saves let more warps reside.
"""

from __future__ import annotations

from dataclasses import dataclass

# Per-SM limits by compute capability (the CUDA programming guide's occupancy table).
_SM_LIMITS = {
    70: dict(warps=64, blocks=32, regs=65536, shared=96 * 1024),
    75: dict(warps=32, blocks=16, regs=65536, shared=64 * 1024),
    80: dict(warps=64, blocks=32, regs=65536, shared=164 * 1024),
    86: dict(warps=48, blocks=16, regs=65536, shared=100 * 1024),
    89: dict(warps=48, blocks=24, regs=65536, shared=100 * 1024),
    90: dict(warps=64, blocks=32, regs=65536, shared=228 * 1024),
}


@dataclass
class Occupancy:
    """How many programs (thread blocks) of a kernel fit on one SM, and what limits it."""

    blocks_per_sm: int
    active_warps: int
    max_warps: int
    limiter: str

    @property
    def occupancy(self) -> float:
        return self.active_warps / self.max_warps


def estimate_occupancy(registers: int, shared: int, num_warps: int, arch: int = 90) -> Occupancy:
    """Blocks per SM allowed by warps, registers (allocated per warp in units of 256) and shared memory."""
    lim = _SM_LIMITS[max(a for a in _SM_LIMITS if a <= max(arch, 70))]
    regs_per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by = {
        "warps": lim["warps"] // num_warps,
        "blocks": lim["blocks"],
        "registers": lim["regs"] // (regs_per_warp * num_warps),
        "shared memory": lim["shared"] // shared if shared else lim["blocks"],
    }
    limiter = min(by, key=by.get)
    blocks = by[limiter]
    return Occupancy(blocks, blocks * num_warps, lim["warps"], limiter)


def arch_number(arch: str) -> int:
    """``"sm_90a"`` -> 90 (90 when the name has no number)."""
    digits = "".join(ch for ch in arch.split("sm_")[-1] if ch.isdigit())
    return int(digits or 90)


__all__ = ["Occupancy", "arch_number", "estimate_occupancy"]
