"""Notebook magics: ``%%tile_kernel``, ``%tile_bench`` and ``%tile_inspect``.

    %load_ext tilelab

    %%tile_kernel --target cpu --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 --show passes
    def add(x, y, out, n, BLOCK: tl.constexpr):
        ...

The cell defines ``add`` as a ``tilelab.jit`` kernel, compiles it and shows the inspector under
the cell. ``--run "add[(g,)](x, y, out, n)"`` then launches it and shows the outputs and the time
above the inspector; in that expression the kernel's name is the kernel just compiled, so
it takes only the runtime arguments (constants and target are those of the cell).
``%tile_bench add[(g,)](x, y, out, n, BLOCK=1024)`` times a launch; ``%tile_inspect add``
shows the inspector of the last compile of ``add`` again.
"""


def load_ipython_extension(ipython) -> None:
    """Registers the magics with ``ipython`` (``%load_ext tilelab`` calls this)."""
    import tilelab.viz  # noqa: F401  (in Jupyter: @tilelab.autotune shows its progress and results)

    from .magics import TileMagics

    ipython.register_magics(TileMagics)


__all__ = ["load_ipython_extension"]
