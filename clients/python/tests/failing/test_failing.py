import os
import pathlib
import signal
import time

import pytest

MODE = os.environ.get("TESTDBD_TEST_MODE", "fail")


@pytest.mark.parametrize("i", range(4))
def test_fails(testdbd_conn, i):
    with testdbd_conn.cursor() as cur:
        cur.execute("DELETE FROM accounts")
    assert i < 0, "fails on purpose"


def test_fails_in_a_transaction(testdbd_tx):
    with testdbd_tx.cursor() as cur:
        cur.execute("INSERT INTO accounts (email) VALUES ('x@example.com')")
    raise RuntimeError("fails on purpose")


@pytest.fixture
def broken(testdbd_db):
    raise RuntimeError("a fixture that fails on purpose")


def test_errors_in_setup(broken):
    pass


@pytest.mark.skipif(MODE != "sigterm", reason="TESTDBD_TEST_MODE=sigterm")
def test_killed(testdbd_conn):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)


@pytest.mark.skipif(MODE != "hang", reason="TESTDBD_TEST_MODE=hang")
def test_hangs(testdbd_conn):
    pathlib.Path(os.environ["TESTDBD_TEST_READY"]).write_text(testdbd_conn.db.decode())
    time.sleep(120)
