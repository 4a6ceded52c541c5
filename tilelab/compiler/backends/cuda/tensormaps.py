"""The TMA tensor maps of a kernel: extra by-value parameters, and how the launch encodes each.

``software-pipeline`` puts a ``ttng.tensormap`` at the top of the kernel for each descriptor
and box its copies read; the kernel takes the maps after its own parameters, in that order,
and the compiled kernel's metadata says how to encode each from the launch's arguments
(``runtime.tensormaps``)::

    {"base": 0, "shape": [["arg", 1], ["arg", 2]], "strides": [["arg", 3], ["const", 1]],
     "box": [128, 64], "dtype": "f16", "swizzle": 128, "fill": "zero", "name": "a_desc"}
"""

from __future__ import annotations

from tilelab.compiler.ir.ops import TensorMapOp


def tensormap_ops(func) -> list[TensorMapOp]:
    """The kernel's tensor maps, in order: its parameters after the ordinary ones."""
    return [op for op in func.body.ops if isinstance(op, TensorMapOp)]


def tensormap_recipes(func) -> list[dict]:
    """What the launch needs to encode each map (``runtime.tensormaps``): argument indices or constants."""
    args = list(func.args)
    names = list(func.attrs.get("arg_names") or [])

    def source(v):
        return ["arg", args.index(v)] if v in args else ["const", int(v.defining_op.value)]

    recipes = []
    for op in tensormap_ops(func):
        base = args.index(op.base)
        name = names[base] if base < len(names) else f"arg{base}"
        recipes.append(
            {
                "base": base,
                "shape": [source(v) for v in op.shape],
                "strides": [source(v) for v in op.strides],
                "box": list(op.attrs["box"]),
                "dtype": op.base.type.pointee.name,
                "swizzle": op.attrs["swizzle"],
                "fill": op.attrs["fill"],
                "name": name.removesuffix("_base"),
            }
        )
    return recipes
