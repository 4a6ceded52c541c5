"""The Resources view model: registers, spills, shared memory, occupancy, threads, compile times.

Why: how many programs fit on a streaming multiprocessor decides how well memory latency is
hidden; the numbers behind that (registers per thread, shared bytes, warps) come from the
compiled kernel's metadata, and the occupancy estimate is the usual CUDA calculator arithmetic
(``backends/cuda/occupancy.py``, which the compiler uses too).

    >>> estimate_occupancy(registers=32, shared=0, num_warps=4, arch=90).occupancy
    1.0
"""

from __future__ import annotations

from tilelab.compiler.backends.cuda.occupancy import arch_number, estimate_occupancy


def _arch(target: str) -> int:
    return arch_number(target) if ":sm_" in target else 90


#: (metadata key, label) of an AMD compile's registers, read from its code object metadata
_AMD_REGISTERS = [
    ("vgprs", "VGPRs / lane"),
    ("sgprs", "SGPRs / wavefront"),
    ("agprs", "AGPRs / lane"),
    ("wavefront_size", "lanes / wavefront"),
    ("vgpr_spills", "VGPRs spilled"),
    ("sgpr_spills", "SGPRs spilled"),
    ("scratch", "scratch / lane"),
]


def amd_rows(compiled) -> list[tuple[str, str]]:
    """The register rows of an AMD compile (VGPRs per lane, SGPRs per wavefront...), those its metadata has."""
    md = dict(getattr(compiled, "metadata", {}) or {})
    return [(label, f"{md[k]} B" if k == "scratch" else str(md[k])) for k, label in _AMD_REGISTERS if k in md]


def registers_line(amd, ptx=None) -> str:
    """One line comparing an AMD compile's registers with a CUDA compile's (``ptx``, optional).

    >>> class K: pass
    >>> a, p = K(), K()
    >>> a.target, a.metadata = "amd:gfx942", {"vgprs": 12, "sgprs": 18, "shared": 0}
    >>> p.target, p.metadata = "cuda:sm_90", {"registers": 10}
    >>> registers_line(a, p)
    'amd:gfx942: 12 VGPRs / lane, 18 SGPRs / wavefront, LDS 0 B · cuda:sm_90: 10 registers / thread'
    """
    md = dict(amd.metadata or {})
    parts = [f"{md[k]} {label}" for k, label in _AMD_REGISTERS[:3] if md.get(k) is not None and (k != "agprs" or md[k])]
    parts.append(f"LDS {md.get('shared', 0) or 0} B")
    line = f"{amd.target}: {', '.join(parts)}"
    registers = (getattr(ptx, "metadata", None) or {}).get("registers")
    if ptx is not None:
        line += f" · {ptx.target}: " + (
            f"{registers} registers / thread" if registers is not None else "no ptxas count"
        )
    return line


def resource_rows(compiled) -> list[tuple[str, str]]:
    """(label, value) rows of the Resources tab for a CompiledKernel; absent metadata is left out."""
    md = dict(getattr(compiled, "metadata", {}) or {})
    rows: list[tuple[str, str]] = [("target", compiled.target)]
    amd = "vgprs" in md  # an AMD compile counts VGPRs and SGPRs, not one kind of registers
    if amd:
        rows += amd_rows(compiled)
    for key, label in [("registers", "registers / thread"), ("spills", "spilled bytes"), ("shared", "shared memory")]:
        if amd and key == "registers":
            continue
        if md.get(key) is not None:
            rows.append((label, f"{md[key]} B" if key != "registers" else str(md[key])))
    if md.get("num_warps") is not None:
        rows.append(("warps / program", str(md["num_warps"])))
    if compiled.target.startswith("cuda") and md.get("registers") is not None:
        occ = estimate_occupancy(
            md["registers"], md.get("shared", 0) or 0, md.get("num_warps", 4), _arch(compiled.target)
        )
        rows.append(("estimated occupancy", f"{occ.occupancy:.0%} ({occ.blocks_per_sm} programs/SM, {occ.limiter})"))
    if md.get("threads") is not None:
        rows.append(("threads used", str(md["threads"])))
    seconds = md.get("compile_seconds")
    if seconds is not None:
        steps = md.get("stage_seconds") or {}
        split = ", ".join(f"{name} {t * 1e3:.0f}" for name, t in steps.items())
        rows.append(("compile time", f"{seconds * 1e3:.1f} ms" + (f" ({split})" if split else "")))
    passes = getattr(compiled, "passes", None) or []
    if passes:
        rows.append(("time in passes", f"{sum(p.seconds for p in passes) * 1e3:.1f} ms ({len(passes)} passes)"))
    rows += [("note", str(note)) for note in md.get("notes") or []]
    return rows
