"""The ``tilelab`` command: compile a kernel of a Python file, print one stage, or write the HTML report.

    tilelab compile add.py::add --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 --stage llir
    tilelab compile add.py::add --signature "..." --const BLOCK=1024 --stage ptx     # cuda:sm_90, no GPU needed
    tilelab report  add.py::add --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 -o add.html
    tilelab compile add.py::add --signature "..." --const BLOCK=1024 --stage amdgcn  # amd:gfx942, inspection only
    tilelab report  add.py::add --signature "..." --const BLOCK=1024 --amd gfx942    # + the AMD ISA section

Why: the inspector's views outside Jupyter (in CI, in an issue). The options are those of
``%%tile_kernel``; a mistake prints one line and exits with status 2, a compile error prints the
compiler's message (file, line, the line itself) and exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import tilelab
from tilelab.compiler.frontend.errors import CompilationError

from .magics.options import OptionError, kernel_parser, parse_consts, parse_signature

#: the AMD GPUs ``tilelab report --amd`` compiles for (as ``tilelab.viz.gpu.AMD_ARCHS``, without importing the viz)
AMD_ARCHS = ("gfx942",)

STAGES = ("tile", "llir", "asm", "ptx", "sass", "amdgcn")


def build_parser() -> argparse.ArgumentParser:
    """``tilelab compile`` and ``tilelab report``, sharing the kernel options."""
    parser = argparse.ArgumentParser(prog="tilelab", description="Compile and inspect tilelab kernels.")
    sub = parser.add_subparsers(dest="command", required=True)
    common = kernel_parser("tilelab")
    compile_p = sub.add_parser("compile", parents=[common], help="print one stage of the compiled kernel")
    compile_p.add_argument("kernel", help="path.py::kernel_name")
    compile_p.add_argument("--stage", choices=STAGES, default="tile")
    report_p = sub.add_parser("report", parents=[common], help="write the inspector as a static HTML page")
    report_p.add_argument("kernel", help="path.py::kernel_name")
    report_p.add_argument("-o", "--output", default=None, help="the HTML file (default: <kernel>.html)")
    report_p.add_argument("--gpu", default=None, help="GPU of the PTX and layout sections: sm_90 (default), sm_80")
    report_p.add_argument(
        "--amd", default=None, choices=AMD_ARCHS, help="add the AMD ISA section, compiled for this AMD GPU (gfx942)"
    )
    return parser


def load_kernel(spec: str):
    """The object named by ``path.py::name``, importing the file as a module."""
    path, sep, name = spec.partition("::")
    if not sep or not name:
        raise OptionError(f"kernel: expected path.py::kernel_name, got {spec!r}")
    file = Path(path)
    if not file.is_file():
        raise OptionError(f"kernel: no file {path!r}")
    module_spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[file.stem] = module
    module_spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise OptionError(f"kernel: {path} defines no {name!r}")
    return getattr(module, name)


#: Stages only a GPU compile produces: asked for without --target, they compile for this one (no GPU needed).
GPU_STAGES = {"ptx": "cuda:sm_90", "sass": "cuda:sm_90", "amdgcn": "amd:gfx942"}


def default_target(args) -> str:
    """``--target``, else ``cuda:sm_90`` for ``--stage ptx``/``sass``, ``amd:gfx942`` for ``amdgcn``, else ``cpu``."""
    return args.target or GPU_STAGES.get(getattr(args, "stage", None), "cpu")


def compile_from_args(args):
    """Compiles the kernel named on the command line with its options; returns it and its GPU compiler."""
    from .viz.gpu import gpu_compiler  # the viz layer, loaded only when a command needs it

    if not args.signature:
        raise OptionError('--signature is required, e.g. --signature "x=*fp32, n=i32"')
    kernel, signature, constants = load_kernel(args.kernel), parse_signature(args.signature), parse_consts(args.const)
    options = {"num_warps": args.num_warps, "num_stages": args.num_stages, "snapshots": args.command == "report"}
    compiled = tilelab.compile(kernel, signature=signature, constants=constants, target=default_target(args), **options)
    return compiled, gpu_compiler(kernel, signature, constants, **options)


def _run(args) -> int:
    compiled, gpu = compile_from_args(args)
    if args.command == "compile":
        text = (compiled.asm or {}).get(args.stage)
        if not text:
            have = ", ".join(k for k, v in (compiled.asm or {}).items() if v)
            raise OptionError(f"--stage {args.stage}: not produced for target {compiled.target} (available: {have})")
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return 0
    from .viz.report import write_report  # ~1 s of view imports, which `tilelab compile` never needs

    out = write_report(compiled, args.output or f"{compiled.name}.html", gpu=gpu, arch=args.gpu, amd=args.amd)
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tilelab`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (OptionError, tilelab.LaunchError) as e:
        print(f"tilelab: error: {e}", file=sys.stderr)
        return 2
    except CompilationError as e:
        print(str(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
