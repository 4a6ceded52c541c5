"""Analyses of the tile IR: axis info, the memory-access model, FLOP and byte counts."""

from .axis_info import AxisInfo, AxisInfoMap, analyze
from .flops_bytes import KernelCost, count_flops_bytes
from .memory_access import AccessModel, access_model, vector_width

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
