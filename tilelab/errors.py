"""Errors a user of the Triton-compatible API can catch, with Triton's names and signatures.

``OutOfResources(required, limit, name)`` says a compiled kernel needs more of a hardware
resource than one program may have (``shared memory`` bytes, say); autotuning skips a config
that raises it, as Triton's does. This module imports nothing from tilelab: every layer may raise
these errors.

    raise OutOfResources(262656, 232448, "shared memory")
    # out of resource: shared memory, Required: 262656, Hardware limit: 232448. Reducing block
    # sizes or `num_stages` may help.
"""

from __future__ import annotations


class TilelabError(Exception):
    """The base of the errors below (Triton's ``TritonError``)."""


class OutOfResources(TilelabError):
    """A kernel needs ``required`` of the resource ``name`` and the hardware allows ``limit``."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        self.message = f"out of resource: {name}, Required: {required}, Hardware limit: {limit}"
        self.message += ". Reducing block sizes or `num_stages` may help."
        super().__init__(self.message)

    def __reduce__(self):  # picklable with its three fields, as Triton's
        return (type(self), (self.required, self.limit, self.name))


__all__ = ["TilelabError", "OutOfResources"]
