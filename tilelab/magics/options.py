"""Options of ``%%tile_kernel`` (and of the ``tilelab`` command): parsing and specialization from arrays.

Why a module of its own: the magic and the command line take the same ``--signature`` and
``--const`` texts, and each mistake in them must come back as one short message.

    >>> parse_signature("x=*fp32, n=i32")
    {'x': '*fp32', 'n': 'i32'}
    >>> parse_consts(["BLOCK=1024", "ACT='relu', SCALE=0.5"])
    {'BLOCK': 1024, 'ACT': 'relu', 'SCALE': 0.5}
"""

from __future__ import annotations

import argparse
import ast
import shlex

import numpy as np

from tilelab.compiler.ir.types import scalar_from_numpy
from tilelab.runtime.descriptors import is_descriptor

#: amd:gfx942 (hip: the same) compiles for inspection only; cuda-ir runs the CUDA passes' final IR on the interpreter
TARGETS = ("cpu", "cuda", "cuda-ir", "interpret", "amd", "hip")


class OptionError(ValueError):
    """A mistake in the magic's or the command's options; the message names the option."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit the process
        raise OptionError(f"{self.prog}: {message}")


def kernel_parser(prog: str = "%%tile_kernel") -> argparse.ArgumentParser:
    """The options shared by ``%%tile_kernel``, ``tilelab compile`` and ``tilelab report``."""
    p = _Parser(prog=prog, add_help=False)
    p.add_argument(
        "--target", default=None, help="cpu, cuda (or cuda:sm_90), cuda-ir (no GPU needed), interpret, amd:gfx942"
    )
    p.add_argument("--signature", default=None, help='"x=*fp32, n=i32"')
    p.add_argument("--args", default=None, help="names of arrays and scalars to specialize from")
    p.add_argument("--const", action="append", default=[], help="NAME=VALUE (repeatable, or comma-separated)")
    p.add_argument("--num-warps", type=int, default=4)
    p.add_argument("--num-stages", type=int, default=3)
    return p


def magic_parser() -> argparse.ArgumentParser:
    """The parser of the ``%%tile_kernel`` line."""
    p = kernel_parser()
    p.add_argument("--show", default=None, help="tabs to open first: passes, llvm, ptx, ...")
    p.add_argument("--gpu", default=None, help="the GPU the PTX and layout tabs show: sm_90 (default), sm_80, sm_90a")
    p.add_argument("--run", default=None, help="a launch expression run after compiling")
    return p


def parse_line(line: str, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Parses a magic line with shell quoting; checks the target."""
    parser = parser or magic_parser()
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise OptionError(f"{parser.prog}: {e}") from None
    ns = parser.parse_args(words)
    if ns.target and ns.target.split(":")[0] not in TARGETS:
        raise OptionError(f"--target: unknown target {ns.target!r} (choose from {', '.join(TARGETS)})")
    archs = ("sm_80", "sm_90", "sm_90a")
    if getattr(ns, "gpu", None) and ns.gpu not in archs:
        raise OptionError(f"--gpu: unknown GPU {ns.gpu!r} (choose from {', '.join(archs)})")
    return ns


def _pairs(text: str, option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in _split_top_level(text):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise OptionError(f"{option}: expected NAME=VALUE, got {item.strip()!r}")
        pairs.append((name.strip(), value.strip()))
    return pairs


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside quotes and brackets (so ``T=(1, 2)`` stays one item)."""
    items, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [s for s in items if s.strip()]


def parse_signature(text: str) -> dict[str, str]:
    """``"x=*fp32, n=i32"`` -> ``{"x": "*fp32", "n": "i32"}`` (types are checked by the compiler)."""
    return dict(_pairs(text, "--signature"))


def parse_consts(texts: list[str]) -> dict:
    """``["BLOCK=1024", "ACT='relu'"]`` -> values as Python literals; a bare word stays a string."""
    out = {}
    for text in texts:
        for name, value in _pairs(text, "--const"):
            try:
                out[name] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                out[name] = value
    return out


def type_of_value(name: str, value) -> str:
    """The signature type of a launch value: arrays -> ``*<elem>``, ints -> i32/i64, floats -> fp32.

    A host tensor descriptor -> Triton's ``tensordesc<f16[64, 64]>`` (its element type and block shape).
    """
    if is_descriptor(value):
        block = ", ".join(str(int(d)) for d in value.block_shape)
        return f"tensordesc<{type_of_value(name, value.base).removeprefix('*')}[{block}]>"
    dtype = getattr(value, "dtype", None)
    if hasattr(value, "shape") and dtype is not None and getattr(value, "ndim", 0) > 0:
        return "*" + scalar_from_numpy(np.dtype(dtype)).name
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, (int, np.integer)):
        return "i32" if -(2**31) <= int(value) < 2**31 else "i64"
    if isinstance(value, (float, np.floating)):
        return "fp32"
    raise OptionError(f"--args: '{name}' is a {type(value).__name__}, not an array or a number")


def signature_from_args(text: str, namespace: dict) -> dict[str, str]:
    """``--args "x, y, out, n"``: the signature from the values of those names in ``namespace``."""
    sig = {}
    for name in (s.strip() for s in text.replace(" ", ",").split(",")):
        if not name:
            continue
        if name not in namespace:
            raise OptionError(f"--args: no variable named '{name}' in the notebook")
        sig[name] = type_of_value(name, namespace[name])
    return sig
