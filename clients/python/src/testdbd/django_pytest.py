"""pytest-django on testdbd. Turn it on with `testdbd_django = true` in the
ini file (or --testdbd-django, TESTDBD_DJANGO=1), next to testdbd_template:

- django_db_setup (pytest-django's documented way to use an existing
  database) points Django's default database at the worker's lease
  (testdbd_lease: one per xdist worker): nothing is created or migrated,
  the template has it all.
- After each database test, once pytest-django has rolled the test's
  transaction back (or flushed every table, after a transaction=True
  test), the lease is reset: with the rollback strategy for django_db
  tests (rewind AUTO_INCREMENT, check that nothing was committed), with
  snapshot after transaction=True tests (put back what the flush emptied).

The reset runs in a teardown hook rather than a fixture: pytest-django's
own fixtures are torn down after any other fixture, and the reset must
follow their rollback or flush.
"""

import pytest
from django.db import connections

from . import django as testdbd_django

_worker = None  # the pytest plugin's Worker, once django_db_setup ran


@pytest.fixture(scope="session")
def django_db_setup(django_db_blocker, _testdbd_worker, testdbd_lease):
    """Each xdist worker uses its own leased database of the template."""
    global _worker
    testdbd_django.use_lease(testdbd_lease, client=_testdbd_worker.client)
    _worker = _testdbd_worker
    yield
    _worker = None
    with django_db_blocker.unblock():
        connections.close_all()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # pytest-django's teardown: the rollback, or the flush
    if _worker is None or _worker.lease is None:
        return  # no database test ran yet, or the lease was released with the session (it is reset then)
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transactional = "transactional_db" in fixtures or bool(marker and marker.kwargs.get("transaction"))
    if not (marker or "db" in fixtures or transactional):
        return
    connections.close_all()  # the reset ends them anyway
    _worker.reset("STRATEGY_SNAPSHOT" if transactional else "STRATEGY_ROLLBACK")
