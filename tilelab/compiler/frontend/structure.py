"""Flattening frontend values into IR values and back.

Loops, branches and calls move *values* across region boundaries, and a value of
the kernel may be more than one IR value: a tuple of tensors, a block pointer (base,
shape, strides, offsets). ``flatten`` turns a value into a *template* plus a list of
tensors; ``rebuild`` puts a template back together from new tensors (a loop's block
arguments, an ``scf.if``'s results).

>>> tpl, parts = flatten((x, 3))      # x a tensor
>>> rebuild(tpl, iter([y]))           # (y, 3)
"""

from __future__ import annotations

from .values import block_ptr, constexpr, tensor, tensor_descriptor

_TENSOR = "tensor"


def flatten(value) -> tuple[object, list[tensor]]:
    """``(template, tensors)``: Python values stay in the template, tensors are listed."""
    if isinstance(value, tensor):
        return _TENSOR, [value]
    if isinstance(value, (block_ptr, tensor_descriptor)):
        return ("block_ptr", value), value.parts()
    if isinstance(value, (tuple, list)):
        templates, parts = [], []
        for item in value:
            t, p = flatten(item)
            templates.append(t)
            parts.extend(p)
        return (type(value), tuple(templates)), parts
    return ("python", value), []


def rebuild(template, parts):
    """The value described by ``template`` with tensors taken in order from the iterator ``parts``."""
    if template == _TENSOR:
        return next(parts)
    kind, payload = template
    if kind == "block_ptr":
        return payload.rebuild([next(parts) for _ in payload.parts()])
    if kind == "python":
        return payload
    return kind(rebuild(t, parts) for t in payload)


def has_tensors(value) -> bool:
    return bool(flatten(value)[1])


def is_python_number(value) -> bool:
    value = value.value if isinstance(value, constexpr) else value
    return isinstance(value, (bool, int, float))
