"""Host-side helpers under Triton's names: ``tilelab.tools.tensor_descriptor`` as ``triton.tools.tensor_descriptor``."""
