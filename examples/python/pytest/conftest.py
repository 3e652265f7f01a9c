"""pytest (with or without pytest-xdist) on testdbd, through the plugin of
the testdbd package (clients/python): each worker leases one database of
the template for the session, and every test that uses testdbd_conn or
testdbd_tx starts from the template (docs/pytest.md). pytest.ini says
which template, built from which migrations.

    pip install ./clients/python                     # once; the plugin registers itself
    python3 -m pytest -n 3 examples/python/pytest    # a daemon at TESTDBD_ADDR

This file is needed only to run the example from a checkout where the
package is not installed: it loads the package's source. Where the package
is installed, both lines change nothing.
"""

import pathlib
import sys

sys.path.append(str(pathlib.Path(__file__).resolve().parents[3] / "clients" / "python" / "src"))
pytest_plugins = ["testdbd.pytest_plugin"]
