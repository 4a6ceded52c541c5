"""``from tilelab.tools.tensor_descriptor import TensorDescriptor``, as from ``triton.tools.tensor_descriptor``."""

from tilelab.runtime.descriptors import TensorDescriptor

__all__ = ["TensorDescriptor"]
