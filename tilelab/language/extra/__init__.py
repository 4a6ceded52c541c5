"""``tl.extra``: vendor libraries (``tl.extra.cuda.libdevice``, ``tl.extra.libdevice``)."""

from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]
