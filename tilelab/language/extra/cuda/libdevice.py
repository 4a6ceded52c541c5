"""``tl.extra.cuda.libdevice`` as a module, for ``import triton.language.extra.cuda.libdevice as libdevice``:
the names of ``tl.extra.libdevice``."""

from ..libdevice import *  # noqa: F403
from ..libdevice import __dict__ as _names

__all__ = [name for name in _names if not name.startswith("_")]
