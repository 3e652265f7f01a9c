"""pytest-django with pytest-xdist on testdbd: each worker leases its own
database of the template, and every database test is followed by a reset
to the template (docs/django.md)."""

import os
import pathlib
import sys

import pytest
from django.conf import settings
from django.db import connections

# testdbd_client.py lives in examples/python; copy it into your project.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from testdbd_client import Testdbd  # noqa: E402

TEMPLATE = "django-app"


@pytest.fixture(scope="session")
def django_db_setup(django_db_blocker):
    """Each xdist worker leases its own database of the template: nothing is
    created or migrated, the template has it all."""
    testdbd = Testdbd()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    lease = testdbd.acquire(TEMPLATE, f"django-{worker}", "STRATEGY_ROLLBACK", ttl_seconds=3600)
    settings.DATABASES["default"].update(
        NAME=lease["database"], HOST=lease["host"], PORT=lease["port"],
        USER=lease["user"], PASSWORD=lease["password"],
    )
    os.environ["TESTDBD_LEASE_ID"] = lease["id"]
    yield
    with django_db_blocker.unblock():
        connections.close_all()
    testdbd.release(lease["id"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After each database test, once pytest-django has rolled its
    transaction back (or flushed every table, after a transaction=True
    test), reset the worker's database to the template: the rollback
    strategy rewinds AUTO_INCREMENT and checks that nothing was committed;
    snapshot puts back what the flush emptied."""
    yield
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transactional = "transactional_db" in fixtures or bool(marker and marker.kwargs.get("transaction"))
    if nextitem is None or not (marker or "db" in fixtures or transactional):
        return  # releasing the lease at the end of the session resets the last one
    connections.close_all()  # the reset ends them anyway
    strategy = "STRATEGY_SNAPSHOT" if transactional else "STRATEGY_ROLLBACK"
    Testdbd().reset(os.environ["TESTDBD_LEASE_ID"], strategy)
