"""``tl.extra.cuda``: CUDA-specific library names (``libdevice``, also importable as a module)."""

from . import libdevice

__all__ = ["libdevice"]
