"""``tl.extra.cuda``: CUDA-specific library names."""

from .. import libdevice

__all__ = ["libdevice"]
