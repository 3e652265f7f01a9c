"""pytest (with or without pytest-xdist) on testdbd: each worker leases one
database of the template for the session, and every test that uses the
db or db_tx fixture starts from the template (docs/pytest.md).

    python3 -m pytest -n 3 examples/python/pytest    # a daemon at TESTDBD_ADDR
"""

import os
import pathlib
import sys
import warnings

import pytest

# testdbd_client.py lives one directory up; copy it into your project.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from testdbd_client import Testdbd, connect  # noqa: E402

TEMPLATE = "app"
MIGRATIONS = pathlib.Path(__file__).resolve().parents[2] / "migrations"


@pytest.fixture(scope="session")
def testdbd():
    return Testdbd()  # TESTDBD_ADDR, TESTDBD_TOKEN


@pytest.fixture(scope="session")
def lease(testdbd):
    """One database per xdist worker (gw0, gw1, ...), for the whole session."""
    testdbd.ensure_template(TEMPLATE, MIGRATIONS)  # idempotent: workers share one build
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    lease = testdbd.acquire(TEMPLATE, f"pytest-{worker}", "STRATEGY_SNAPSHOT", ttl_seconds=3600)
    yield lease
    testdbd.release(lease["id"])


@pytest.fixture
def db(testdbd, lease):
    """A connection in autocommit mode; after the test the database is reset
    to the template by snapshot, whatever the test committed."""
    conn = connect(lease, autocommit=True)
    yield conn
    conn.close()  # the reset ends the lease's connections anyway
    testdbd.reset(lease["id"])


@pytest.fixture
def db_tx(testdbd, lease):
    """A connection inside a transaction that is rolled back after the test;
    the rollback reset then rewinds AUTO_INCREMENT and checks that nothing
    was committed (restoring and reporting what was)."""
    conn = connect(lease, autocommit=False)
    yield conn
    conn.rollback()
    conn.close()
    report = testdbd.reset(lease["id"], "STRATEGY_ROLLBACK")
    if report["fallback_reason"]:
        warnings.warn(f"testdbd: {report['fallback_reason']}")
