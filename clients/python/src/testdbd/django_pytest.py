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
  Django's class-based tests likewise: snapshot after each
  TransactionTestCase test, rollback after the last test of a TestCase
  class (once tearDownClass rolled the class's transaction back).
  CommittingTestCase and RollbackTestCase reset by themselves.

The reset runs in a teardown hook rather than a fixture: pytest-django's
own fixtures are torn down after any other fixture, and the reset must
follow their rollback or flush.
"""

import pytest
from django.db import connections
from django.test import TestCase, TransactionTestCase

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


def _reset_strategy(item, nextitem):
    """The reset a test calls for once pytest-django's teardown ran, or
    None: the rollback strategy after django_db tests and after the last
    test of a Django TestCase class (whose transaction is rolled back at the
    end of the class), snapshot after transactional tests, Django's
    TransactionTestCase tests included (flushed by Django)."""
    cls = getattr(item, "cls", None)
    if cls is not None and issubclass(cls, TransactionTestCase):  # Django's class-based tests
        if issubclass(cls, (testdbd_django.CommittingTestCase, testdbd_django.RollbackTestCase)):
            return None  # they reset by themselves
        if issubclass(cls, TestCase):
            same_class = nextitem is not None and getattr(nextitem, "cls", None) is cls
            return None if same_class else "STRATEGY_ROLLBACK"
        return "STRATEGY_SNAPSHOT"
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transactional = "transactional_db" in fixtures
    if marker is not None:  # django_db(transaction=False, reset_sequences=False, ...), by keyword or position
        args = dict(zip(("transaction", "reset_sequences"), marker.args), **marker.kwargs)
        transactional = transactional or bool(args.get("transaction") or args.get("reset_sequences"))
    if transactional:
        return "STRATEGY_SNAPSHOT"
    if marker or "db" in fixtures:
        return "STRATEGY_ROLLBACK"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # pytest-django's teardown: the rollback, or the flush (and tearDownClass after a class's last test)
    if _worker is None or _worker.lease is None:
        return  # no database test ran yet, or the lease was released with the session (it is reset then)
    strategy = _reset_strategy(item, nextitem)
    if strategy is not None:
        connections.close_all()  # the reset ends them anyway
        _worker.reset(strategy)
