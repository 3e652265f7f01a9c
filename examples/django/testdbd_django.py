"""testdbd for Django's test runner: tests reset to the template by testdbd
instead of Django's flush (TransactionTestCase) or drifting AUTO_INCREMENT
counters (TestCase)."""

import os

from django.db import connections
from django.test import TestCase, TransactionTestCase

from testdbd_client import Testdbd


def reset(strategy=None):
    """Closes Django's connections (a reset ends them anyway) and resets the
    lease named by TESTDBD_LEASE_ID; returns the report."""
    connections.close_all()
    return Testdbd().reset(os.environ["TESTDBD_LEASE_ID"], strategy)


class CommittingTestCase(TransactionTestCase):
    """Tests that commit freely; after each one the database is reset to the
    template (the lease's strategy, snapshot by default) instead of Django
    flushing every table."""

    def _fixture_teardown(self):
        reset()


class RollbackTestCase(TestCase):
    """Django's TestCase (each test in a transaction rolled back), plus a
    rollback reset after the class: AUTO_INCREMENT counters are rewound and
    anything committed anyway is restored."""

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        report = reset("STRATEGY_ROLLBACK")
        if report["fallback_reason"]:
            print(f"\n{cls.__name__}: {report['fallback_reason']}")
