"""Line tables in the CPU backend's output: LLVM IR and assembly lines map to kernel source lines."""

import inspect

import numpy as np

import tilelab
import tilelab.language as tl
from tilelab.viz.models import line_info


@tilelab.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.5, mask=mask)


SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def source_line(text: str) -> int:
    """The file line of the first line of ``scale`` containing ``text``."""
    lines, first = inspect.getsourcelines(scale.fn if hasattr(scale, "fn") else scale)
    return first + next(i for i, line in enumerate(lines) if text in line)


def compiled():
    return tilelab.compile(scale, signature=SIG, constants={"BLOCK": 256}, target="cpu", snapshots=False)


def test_optimized_llvm_ir_carries_the_load_and_store_lines():
    llir = compiled().asm["llir"]
    assert f"!DILocation(line: {source_line('tl.load(')}," in llir
    assert f"!DILocation(line: {source_line('tl.store(')}," in llir
    mapped = {line for line in line_info(llir, "llir") if line is not None}
    assert source_line("tl.load(") in mapped and source_line("tl.store(") in mapped


def test_assembly_carries_loc_directives_for_kernel_lines():
    asm = compiled().asm["asm"]
    mapped = {line for line in line_info(asm, "asm") if line is not None}
    assert source_line("tl.store(") in mapped


def test_line_tables_do_not_change_results(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    scale[(tilelab.cdiv(n, 256),)](x, out, n, BLOCK=256, target="cpu")
    np.testing.assert_array_equal(out, x * np.float32(2.5))
