"""Line tables of the CPU backend: the shared ``LineTable`` (it lives in ``backends/common/debuginfo.py``)."""

from ..common.debuginfo import LineTable

__all__ = ["LineTable"]
