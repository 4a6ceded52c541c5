"""The course notebooks as code: one module per notebook, each with ``FILENAME`` and ``cells()``."""
