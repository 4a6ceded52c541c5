"""Passes over the tile IR: one pass per file, listed per target in ``pipeline.py``.

Target-independent: ``inline``, ``canonicalize``, ``licm``, ``cse``, ``dce``. Each file has
``NAME`` and ``run(module) -> bool``; ``manager.PassManager`` runs a list of them, and
``tracing`` records which rewrite rule fired where, for the pass viewer.
"""
