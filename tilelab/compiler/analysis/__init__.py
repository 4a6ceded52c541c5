"""Analyses of the tile IR: axis info, the memory-access model, FLOP and byte counts."""

import importlib

#: Each name by the module that defines it, imported when first asked for: a compile needs
#: the axis info and the vector widths, not the cost model the views use.
_LAZY = {
    "AxisInfo": ".axis_info",
    "AxisInfoMap": ".axis_info",
    "analyze": ".axis_info",
    "AccessModel": ".memory_access",
    "access_model": ".memory_access",
    "vector_width": ".memory_access",
    "KernelCost": ".flops_bytes",
    "count_flops_bytes": ".flops_bytes",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name], __name__), name)


__all__ = [
    "AxisInfo",
    "AxisInfoMap",
    "analyze",
    "AccessModel",
    "access_model",
    "vector_width",
    "KernelCost",
    "count_flops_bytes",
]
