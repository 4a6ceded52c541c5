"""A CUDA launch and compile with bf16 / fp8 tensors and constants never import ml_dtypes (most of a second).

Each check runs in a fresh process, where nothing else has imported it; a CUDA tensor is stood in for by
an object that looks like one to the launch path (a ``Tensor`` class of a ``torch`` module).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, types
import tilelab
import tilelab.language as tl
from tilelab.runtime import prefetch
from tilelab.runtime.compiled import CompiledKernel
from tilelab.runtime.errors import LaunchError
from tilelab.runtime.specialize import specialize_arg

prefetch.join()


class Tensor:  # what the launch path reads of a torch CUDA tensor
    __module__ = "torch.stub"

    def __init__(self, dtype):
        self.dtype = "torch." + dtype
        self.device = types.SimpleNamespace(type="cuda", index=0)

    def data_ptr(self):
        return 1 << 20


@tilelab.jit
def scale(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    c = tl.full((BLOCK,), 1.5, tl.bfloat16) * 3.0  # a bf16 constant, folded
    tl.store(y + offs, (v * c).to(tl.float8e4nv).to(tl.bfloat16), mask=offs < n)


specs = {d: specialize_arg("x", Tensor(d)).type for d in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float32")}
ck = tilelab.compile(scale, {"x": "*bf16", "y": "*bf16", "n": "i32"}, {"BLOCK": 256}, target="cuda:sm_90a",
                     cache=False)
accepted = CompiledKernel.marshal(ck, "x", Tensor("bfloat16")) is not None
try:
    CompiledKernel.marshal(ck, "x", Tensor("float16"))
    refused = ""
except LaunchError as e:
    refused = str(e)
print(json.dumps({"specs": specs, "ptx": "ptx" in ck.asm, "accepted": accepted, "refused": refused,
                  "ml_dtypes": "ml_dtypes" in sys.modules}))
"""


def test_bf16_and_fp8_compile_and_launch_checks_do_not_import_ml_dtypes(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = {"bfloat16": "*bf16", "float8_e4m3fn": "*fp8e4nv", "float8_e5m2": "*fp8e5", "float32": "*f32"}
    assert got["specs"] == want
    assert got["ptx"] and got["accepted"]
    assert "expects an array of bf16, got an array of float16" in got["refused"]
    assert not got["ml_dtypes"]
