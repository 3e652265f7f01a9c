"""The pytest plugin against a real daemon: every test starts from the
template, whatever the tests before it on the same worker did."""

import os

import pytest

import testdbd


def scalar(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


@pytest.mark.parametrize("i", range(16))
def test_commits_are_reset(testdbd_conn, i):
    assert scalar(testdbd_conn, "SELECT COUNT(*) FROM accounts") == 2
    with testdbd_conn.cursor() as cur:
        cur.execute("INSERT INTO accounts (email) VALUES (%s)", (f"new{i}@example.com",))
        assert cur.lastrowid == 3  # AUTO_INCREMENT is rewound by every reset
        cur.execute("DELETE FROM transfers")


@pytest.mark.parametrize("i", range(8))
def test_transactions_are_rolled_back(testdbd_tx, i):
    with testdbd_tx.cursor() as cur:
        cur.execute("INSERT INTO transfers (account_id, amount) VALUES (2, -10)")
        assert cur.lastrowid == 3
        cur.execute("UPDATE accounts SET balance = balance - 10 WHERE id = 2")
    assert scalar(testdbd_tx, "SELECT balance FROM accounts WHERE id = 2") == 40


@pytest.mark.parametrize("i", range(4))
def test_own_connections(testdbd_db, i):
    """testdbd_db is the lease; tests open what connections they like."""
    conn = testdbd_db.connect(autocommit=True)
    try:
        assert scalar(conn, "SELECT DATABASE()") == testdbd_db.database
        assert scalar(conn, "SELECT SUM(amount) FROM transfers") == 150
        with conn.cursor() as cur:
            cur.execute("DELETE FROM transfers")
    finally:
        conn.close()


def test_lease_per_worker(testdbd_lease, testdbd_template):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    assert testdbd_lease["worker"] == f"pytest-{worker}"
    assert testdbd_lease["template"] == "py-plugin-suite"
    assert testdbd_lease["template_hash"] == testdbd_template["hash"]
    assert testdbd_lease.env()["DB_DATABASE"] == testdbd_lease.database


def test_client_lists_this_lease(testdbd_client, testdbd_lease):
    leases = {lease.id: lease for lease in testdbd_client.list_leases("py-plugin-suite")}
    assert testdbd_lease.id in leases
    assert isinstance(leases[testdbd_lease.id]["resets"], int)  # a 64-bit field, read as an int
    assert isinstance(testdbd_client.get_template("py-plugin-suite")["version"], int)


def test_no_database(testdbd_client):
    """Tests that ask for no database fixture cost nothing."""
    assert testdbd_client.health()["status"] == "SERVING"


def test_errors_carry_the_daemons_message(testdbd_client):
    with pytest.raises(testdbd.TestdbdError) as e:
        testdbd_client.acquire("no-such-template", "pytest-nobody")
    assert e.value.code == 5 and e.value.status == 404
    assert 'no template named "no-such-template"' in str(e.value)
