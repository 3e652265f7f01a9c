"""Django tests that fail on purpose, run by clients/python_test.go with
examples/django's project: `manage.py test --parallel 4 failing_django`
must release every lease all the same. TESTDBD_TEST_MODE picks how the run
ends: "fail" (failures and errors in every worker), "crash" (a worker
process dies in the middle of a test), "hang" (tests wait until the run is
interrupted; TESTDBD_TEST_READY names a file each writes once it runs)."""

import os
import pathlib
import time
import unittest

from django.db import connection
from django.test import TestCase, TransactionTestCase

from blog.models import Author

MODE = os.environ.get("TESTDBD_TEST_MODE", "fail")


def _database():
    with connection.cursor() as cur:
        cur.execute("SELECT DATABASE()")
        return cur.fetchone()[0]


class _Fails:
    def test_fails(self):
        Author.objects.create(email=f"{type(self).__name__.lower()}@example.com")
        self.assertEqual(Author.objects.count(), 0, "fails on purpose")

    def test_errors(self):
        raise RuntimeError("errors on purpose")


@unittest.skipIf(MODE != "fail", "TESTDBD_TEST_MODE=fail")
class FailsInATransaction(_Fails, TestCase):
    pass


@unittest.skipIf(MODE != "fail", "TESTDBD_TEST_MODE=fail")
class FailsCommitted(_Fails, TransactionTestCase):
    pass


@unittest.skipIf(MODE != "fail", "TESTDBD_TEST_MODE=fail")
class FailsToo(_Fails, TransactionTestCase):
    pass


@unittest.skipIf(MODE != "fail", "TESTDBD_TEST_MODE=fail")
class FailsAgain(_Fails, TestCase):
    pass


@unittest.skipIf(MODE != "crash", "TESTDBD_TEST_MODE=crash")
class Crashes(TransactionTestCase):
    def test_crash(self):
        Author.objects.create(email="crash@example.com")
        os._exit(3)  # the worker process dies without any cleanup


class _Hangs:
    def test_hangs(self):
        ready = pathlib.Path(os.environ["TESTDBD_TEST_READY"])
        with open(ready, "a", encoding="utf-8") as f:
            f.write(_database() + "\n")
        time.sleep(120)


@unittest.skipIf(MODE not in ("hang", "crash"), "TESTDBD_TEST_MODE=hang or crash")
class Hangs1(_Hangs, TransactionTestCase):
    pass


@unittest.skipIf(MODE != "hang", "TESTDBD_TEST_MODE=hang")
class Hangs2(_Hangs, TestCase):
    pass


@unittest.skipIf(MODE != "hang", "TESTDBD_TEST_MODE=hang")
class Hangs3(_Hangs, TransactionTestCase):
    pass


@unittest.skipIf(MODE != "hang", "TESTDBD_TEST_MODE=hang")
class Hangs4(_Hangs, TestCase):
    pass
