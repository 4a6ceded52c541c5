"""Reading layouts back from their IR text (``#blocked<...>``, ``#linear<...>``, ...).

The printer writes a tensor's layout as the layout's ``str``; the IR parser (and the
on-disk cache, which stores IR as text) turns it back into the same map with
``parse_layout(text, shape)``. Named layouts do not print their shape: the tensor
type around them gives it.

    >>> str(parse_layout("#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>", [128]))
    '#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>'
"""

from __future__ import annotations

import ast
import functools

from .distributed import blocked, dot_operand, mma_m16n8k16_accumulator, slice_layout, wgmma_accumulator
from .linear import LinearLayout
from .shared import nvmma_shared, swizzled_shared


def _split_top(body: str) -> list[str]:
    """Split ``a=[1, 2], b=#x<c, d>`` at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch in "[<":
            depth += 1
        elif ch in "]>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return [p for p in parts if p]


def _fields(text: str) -> tuple[str, list[str], dict[str, str]]:
    """``#name<flag, key=value, ...>`` -> ``(name, flags, {key: value})``."""
    text = text.strip()
    if not (text.startswith("#") and text.endswith(">") and "<" in text):
        raise ValueError(f"not a layout: {text!r}")
    name, body = text[1:].split("<", 1)
    flags, values = [], {}
    for part in _split_top(body[:-1]):
        key, eq, value = part.partition("=")
        if eq:
            values[key.strip()] = value.strip()
        else:
            flags.append(part)
    return name, flags, values


def _ints(text: str):
    return ast.literal_eval(text)


def parse_layout(text: str, shape) -> LinearLayout:
    """The layout printed as ``text``, for a tile of ``shape``.

    Layouts are values (nothing changes one after it is made), so each text and shape is
    parsed once: a module's IR names the same few layouts on most of its lines, and reading
    a cached kernel back spent most of its time in them.
    """
    return _parse_layout(text, tuple(int(s) for s in shape))


@functools.lru_cache(maxsize=4096)
def _parse_layout(text: str, shape: tuple[int, ...]) -> LinearLayout:
    name, flags, f = _fields(text)
    shape = list(shape)
    if name == "linear":
        bases = {k: _ints(v) for k, v in f.items() if k not in ("shape", "out")}
        return LinearLayout(bases, shape)
    if name == "blocked":
        args = (_ints(f["sizePerThread"]), _ints(f["threadsPerWarp"]), _ints(f["warpsPerCTA"]), _ints(f["order"]))
        return blocked(shape, *args)
    if name == "slice":
        dim = int(f["dim"])
        parent_shape = shape[:dim] + [_parent_dim(f["parent"], shape, dim)] + shape[dim:]
        return slice_layout(parse_layout(f["parent"], parent_shape), dim)
    if name == "mma":
        return mma_m16n8k16_accumulator(shape, _ints(f["warpsPerCTA"]))
    if name == "wgmma":
        return wgmma_accumulator(shape, _ints(f["warpsPerCTA"]), _ints(f["instrShape"])[1])
    if name == "dot_op":
        op_idx, k_width = int(f["opIdx"]), int(f["kWidth"])
        parent_fields = _fields(f["parent"])[2]
        *_, wm, wn = _ints(parent_fields["warpsPerCTA"])
        *batch, rows, cols = shape
        acc_shape = [*batch, rows, 8 * wn] if op_idx == 0 else [*batch, 16 * wm, cols]
        if "instrShape" in parent_fields:  # a #wgmma parent: its columns are whole instructions
            acc_shape = [rows, _ints(parent_fields["instrShape"])[1] * wn]
        parent = parse_layout(f["parent"], acc_shape)
        return dot_operand(parent, op_idx, k_width, k=cols if op_idx == 0 else rows)
    if name == "swizzled_shared":
        args = (int(f["vec"]), int(f["perPhase"]), int(f["maxPhase"]), _ints(f["order"]))
        return swizzled_shared(shape, *args)
    if name == "nvmma_shared":
        swizzle = int(f["swizzle"].rstrip("B"))
        return nvmma_shared(shape, int(f["elemBytes"]), swizzle, _ints(f["order"]))
    raise ValueError(f"unknown layout #{name}")


def _parent_dim(parent_text: str, shape, dim: int) -> int:
    """The sliced dim's size: the smallest the parent covers without broadcasting (one block)."""
    name, _, f = _fields(parent_text)
    if name == "blocked":
        return _ints(f["sizePerThread"])[dim] * _ints(f["threadsPerWarp"])[dim] * _ints(f["warpsPerCTA"])[dim]
    if name == "mma":  # 2-d, or 3-d with a batch dim first (one batch per warp along it)
        warps = _ints(f["warpsPerCTA"])
        return ((1,) * (len(warps) - 2) + (16, 8))[dim] * warps[dim]
    if name == "wgmma":
        wm, wn = _ints(f["warpsPerCTA"])
        return (16 * wm, _ints(f["instrShape"])[1] * wn)[dim]
    return 1
