"""The one IPython test shell of the lab tests (IPython allows a single global one per process)."""

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython


@pytest.fixture(scope="session")
def shell():
    ip = start_ipython() or InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tilelab.magics")
    return ip
