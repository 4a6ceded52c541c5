"""Emission for NVIDIA GPUs: LLVM IR -> PTX (llvmlite's NVPTX target), PTX -> cubin and SASS.

PTX always comes from llvmlite, so the CUDA target compiles "for inspection" on any
machine. ``ptxas`` (the CUDA toolkit, or the ``nvidia-cuda-nvcc`` wheel) turns PTX into
a cubin and reports registers, spills and shared memory; ``nvdisasm`` or ``cuobjdump``
gives the SASS. Where they are missing, the fields say so instead of failing. A compile's
``CompileOptions.tools`` may name the tools' paths (``tools``: tool name -> path); they are
found on ``PATH``, under ``$CUDA_HOME/bin`` or in the pip wheels otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

import llvmlite.binding as llvm

TRIPLE = "nvptx64-nvidia-cuda"
#: Shared-memory pointers (address space 3) are 32 bits wide and indexed with i32, as in Triton: a
#: kernel's shared-memory addresses are then i32 arithmetic from end to end (the inline PTX takes them
#: as ``r`` operands). With 64-bit ones LLVM widens every index (``gep i8, ptr addrspace(3) @smem,
#: i64 (zext i32 ...)``) and truncates again for the asm; on a 128x128 persistent matmul the NVPTX
#: straight-line strength reduction spent most of its emit time asking ScalarEvolution about those
#: extensions. The target machine agrees through LLVM's ``--nvptx-short-ptr``.
DATALAYOUT = "e-p3:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"

#: PTX ISA version per architecture family (LLVM's ``+ptxNN`` feature).
PTX_FEATURE = {"sm_80": "+ptx78", "sm_86": "+ptx78", "sm_89": "+ptx78", "sm_90": "+ptx86", "sm_90a": "+ptx86"}

_machines: dict[str, llvm.TargetMachine] = {}


def target_machine(arch: str) -> llvm.TargetMachine:
    """The NVPTX target machine for ``arch`` (``sm_90a``, ``sm_80`` ...), cached."""
    if arch not in _machines:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        if not _machines:  # once per process: the option is global, and set before any NVPTX machine exists
            llvm.set_option("", "--nvptx-short-ptr")
        target = llvm.Target.from_triple(TRIPLE)
        feature = PTX_FEATURE.get(arch, "+ptx86")
        _machines[arch] = target.create_target_machine(cpu=arch, features=feature, opt=3)
    return _machines[arch]


def llvm_to_ptx(module: llvm.ModuleRef, arch: str) -> str:
    """PTX text for an (optimized, verified) LLVM module."""
    return target_machine(arch).emit_assembly(module)


def toolkit_roots(tools: Mapping[str, str] | None = None) -> list[str]:
    """The CUDA toolkit folders to search: ``CUDA_HOME``, ``CUDA_PATH`` (from the options), then the usual one."""
    tools = tools or {}
    return [root for root in (tools.get("CUDA_HOME"), tools.get("CUDA_PATH"), "/usr/local/cuda") if root]


def find_tool(name: str, tools: Mapping[str, str] | None = None) -> str | None:
    """Path of a CUDA tool: ``tools[name]``, then PATH, then the toolkit's ``bin/``, then the pip wheels."""
    given = (tools or {}).get(name)
    if given and os.path.exists(given):
        return given
    found = shutil.which(name)
    if found:
        return found
    for root in toolkit_roots(tools):
        if os.path.exists(os.path.join(root, "bin", name)):
            return os.path.join(root, "bin", name)
    return _wheel_tool(name)


def _wheel_tool(name: str) -> str | None:
    """A tool of the ``nvidia-cuda-nvcc`` / ``nvidia-cuda-nvdisasm`` wheels (``nvidia/<pkg>/bin/<name>``)."""
    try:
        import nvidia  # type: ignore  (the namespace package the CUDA wheels install into)
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for pkg in sorted(os.listdir(root)):
            path = os.path.join(root, pkg, "bin", name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


@dataclass
class CubinResult:
    """What ptxas produced: the binary and its resource report."""

    cubin: bytes | None
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    shared_static: int = 0
    log: str = ""
    sass: str | None = None
    notes: list[str] = field(default_factory=list)


_USAGE = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM = re.compile(r"(\d+) bytes smem")
#: ptxas's warnings of slower code (``(C7515) Potential Performance Loss: wgmma.mma_async instructions are
#: serialized ...``), without the function's name that ends them
_PERFORMANCE = re.compile(r"(\(C\d+\) Potential Performance Loss: .*?)(?: in the function '[^']*')?\s*$", re.M)


def ptx_to_cubin(ptx: str, arch: str, sass: bool = True, tools: Mapping[str, str] | None = None) -> CubinResult:
    """Assemble PTX with ptxas (``-v`` for the resource report); disassemble when a tool exists."""
    ptxas = find_tool("ptxas", tools)
    if ptxas is None:
        return CubinResult(None, notes=["ptxas not found: install the CUDA toolkit or the nvidia-cuda-nvcc wheel"])
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run(
            [ptxas, f"-arch={arch}", "-v", "-O3", "-lineinfo", src, "-o", out], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(f"ptxas rejected the generated PTX (a compiler bug):\n{proc.stderr.strip()}")
        with open(out, "rb") as f:
            result = CubinResult(f.read(), log=proc.stderr)
        _parse_report(result, proc.stderr)
        if sass:
            result.sass = disassemble(out, result.notes, tools)
    return result


def disassembler(tools: Mapping[str, str] | None = None) -> str | None:
    """The tool that will give SASS (``nvdisasm`` or ``cuobjdump``), or ``None``."""
    return find_tool("nvdisasm", tools) or find_tool("cuobjdump", tools)


def sass_of_cubin(cubin: bytes, tools: Mapping[str, str] | None = None) -> str:
    """SASS text of a cubin; on failure, a line saying why (the inspector shows it in place of SASS).

    Disassembling costs more than assembling (hundreds of ms for a small kernel), and only the
    inspector and the CLI read SASS, so targets call this on first access, not at compile time.
    """
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        text = disassemble(path, notes, tools)
    return text if text is not None else "// SASS not available: " + "; ".join(notes)


def _parse_report(result: CubinResult, log: str) -> None:
    """Registers, spills and static shared memory from ptxas's ``-v`` report; its performance warnings as notes
    (the lab's Resources view shows them), the function's name left out.

        >>> r = CubinResult(b"")
        >>> _parse_report(r, "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are "
        ...               "serialized due to ... in the function 'k'\\nptxas info    : Used 40 registers")
        >>> r.registers, r.notes
        (40, ['ptxas: (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to ...'])
    """
    for m in _PERFORMANCE.finditer(log):
        result.notes.append("ptxas: " + m.group(1))
    if m := _USAGE.search(log):
        result.registers = int(m.group(1))
    if m := _SPILL.search(log):
        result.stack_frame, result.spill_stores, result.spill_loads = (int(g) for g in m.groups())
    if m := _SMEM.search(log):
        result.shared_static = int(m.group(1))


def disassemble(cubin_path: str, notes: list[str], tools: Mapping[str, str] | None = None) -> str | None:
    """SASS text of a cubin through nvdisasm or cuobjdump, or ``None`` (with a note) if neither exists."""
    for tool, args in (("nvdisasm", ["-c", "-g"]), ("cuobjdump", ["-sass"])):
        path = find_tool(tool, tools)
        if path is None:
            continue
        proc = subprocess.run([path, *args, cubin_path], capture_output=True, text=True)
        if proc.returncode == 0:
            return proc.stdout
        notes.append(f"{tool} failed: {proc.stderr.strip()[:200]}")
    notes.append("SASS not shown: neither nvdisasm nor cuobjdump was found")
    return None
