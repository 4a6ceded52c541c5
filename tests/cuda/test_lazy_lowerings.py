"""The CUDA lowering table: modules imported on first use cover exactly the ops they lower."""

import os
import subprocess
import sys
from pathlib import Path

from tilelab.compiler.backends.cuda import context

LAZY_MODULES = set(context.LOWERINGS.on_demand)


def test_every_lazy_op_is_lowered_by_the_module_named_for_it():
    owners = {cls: fn.__module__.rsplit(".", 1)[-1] for cls, fn in context.LOWERINGS.items()}
    for module, classes in context.LOWERINGS.on_demand.items():
        assert all(owners.get(cls) == module for cls in classes), module
    for cls, module in owners.items():  # an op of a lazy module must be listed, or it would not be found
        assert module not in LAZY_MODULES or cls in context.LOWERINGS.on_demand[module], cls.name


def test_a_vector_add_compiles_without_the_lazy_modules(tmp_path):
    code = """
import sys
import tilelab, tilelab.language as tl
from tilelab.compiler.backends.cuda import context

@tilelab.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
tilelab.compile(add, signature=sig, constants={"BLOCK": 256}, target="cuda:sm_90a", cache=False)
loaded = {m for m in context.LOWERINGS.on_demand if f"tilelab.compiler.backends.cuda.{m}" in sys.modules}
print(sorted(loaded))
"""
    script = tmp_path / "add.py"
    script.write_text(code)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip().splitlines()[-1] == "[]"
