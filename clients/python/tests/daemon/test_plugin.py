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


def status(conn, name):
    with conn.cursor() as cur:
        cur.execute("SHOW STATUS LIKE %s", (name,))
        return cur.fetchone()[1]


def test_tls_verified_with_the_lease_ca(testdbd_db):
    """PyMySQL with ssl={"ca": ...} and check_hostname connects with TLS,
    verifying the server with the lease's CA certificate; the lease's
    connect(tls=True) does the same, and connect() stays plain."""
    import pymysql

    conn = pymysql.connect(host=testdbd_db.host, port=int(testdbd_db.port), user=testdbd_db.user,
                           password=testdbd_db.password, database=testdbd_db.database,
                           ssl={"ca": testdbd_db.ca_file(), "check_hostname": True})
    try:
        assert status(conn, "Ssl_cipher")
        assert scalar(conn, "SELECT COUNT(*) FROM accounts") == 2
    finally:
        conn.close()
    for tls, want in ((True, True), (False, False)):
        conn = testdbd_db.connect(tls=tls)
        try:
            assert bool(status(conn, "Ssl_cipher")) == want
        finally:
            conn.close()


def test_tls_with_another_ca_is_refused(testdbd_db):
    """Verification is real: trusting other authorities (the system's),
    the client refuses the server's certificate."""
    import ssl

    import pymysql

    others = ssl.get_default_verify_paths().openssl_cafile
    if not os.path.exists(others):
        pytest.skip(f"no system CA bundle at {others} (Debian package ca-certificates)")
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        pymysql.connect(host=testdbd_db.host, port=int(testdbd_db.port), user=testdbd_db.user,
                        password=testdbd_db.password, database=testdbd_db.database,
                        ssl={"ca": others, "check_hostname": True})


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
