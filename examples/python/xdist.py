"""What a pytest-xdist suite does with testdbd, without pytest: each worker
process (PYTEST_XDIST_WORKER=gw0, gw1, ...) leases one database, runs its
tests one after another with a reset between them, and releases the
database when it is done.

    python3 examples/python/xdist.py     # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)

Run without PYTEST_XDIST_WORKER it plays xdist: it builds the template once
and starts three workers. gw0 and gw1 let tests commit and reset with the
snapshot strategy; gw2 runs each test in a transaction it rolls back and
resets with the rollback strategy, as Django's TestCase would. Every test
expects the template's state, so a reset that missed anything fails the
next one. Exit status 1 if any test failed. It uses the testdbd package
(clients/python) as a library; docs/pytest.md shows its pytest plugin,
which does all of this for a pytest suite.
"""

import os
import pathlib
import subprocess
import sys

try:
    import testdbd  # pip install ./clients/python
except ImportError:  # a checkout without it installed: the package's source
    sys.path.append(str(pathlib.Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))
    import testdbd

TEMPLATE = "app"
WORKERS = 3
MIGRATIONS = pathlib.Path(__file__).parent.parent / "migrations"


def main():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return run_worker(worker) if worker else run_controller()


def run_controller():
    """Builds the template and runs the workers, as xdist's controller would."""
    tpl = testdbd.Client().ensure_template(TEMPLATE, MIGRATIONS)
    print(f"template {tpl['name']}: {tpl['state']}, {tpl['tables']} tables", flush=True)
    procs = [
        subprocess.Popen([sys.executable, __file__], env={**os.environ, "PYTEST_XDIST_WORKER": f"gw{i}"},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(WORKERS)
    ]
    failed = 0
    for i, p in enumerate(procs):
        out, _ = p.communicate()
        print(out, end="")
        if p.returncode != 0:
            print(f"worker gw{i} failed (exit {p.returncode})")
            failed += 1
    return 1 if failed else 0


def run_worker(worker):
    """One worker: one lease for its PYTEST_XDIST_WORKER, the tests, a reset after each."""
    strategy = "STRATEGY_ROLLBACK" if worker == f"gw{WORKERS - 1}" else "STRATEGY_SNAPSHOT"
    client = testdbd.Client()  # TESTDBD_ADDR, TESTDBD_TOKEN
    lease = client.acquire(TEMPLATE, testdbd.worker_key("xdist"), strategy)
    print(f"[{worker}] lease {lease['id']}: database {lease['database']}, strategy {strategy}", flush=True)
    failed = 0
    try:
        for test in TESTS:
            # A reset ends the lease's open connections, so each test connects
            # anew (Django reconnects by itself; see docs/django.md).
            conn = lease.connect(autocommit=strategy != "STRATEGY_ROLLBACK")
            try:
                with conn.cursor() as cur:
                    test(cur)
                result = "ok"
            except Exception as e:  # a failed test, reported like pytest would
                result = f"FAIL: {e}"
                failed += 1
            finally:
                if strategy == "STRATEGY_ROLLBACK":
                    conn.rollback()
                conn.close()
            report = client.reset(lease.id)
            restored = ", ".join(report["tables_reset"]) or "nothing to restore"
            print(f"[{worker}] {test.__doc__}: {result} (reset by {report['strategy'][9:].lower()} "
                  f"in {report['total_ms']:.2f} ms: {restored})", flush=True)
            if report["fallback_reason"]:
                print(f"[{worker}]   the reset did more than usual: {report['fallback_reason']}", flush=True)
    finally:
        client.release(lease.id)
    return 1 if failed else 0


def scalar(cur, sql):
    cur.execute(sql)
    return cur.fetchone()[0]


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def test_create_user(cur):
    """creates a user with id 4"""
    cur.execute("INSERT INTO users (email, name) VALUES ('new@example.com', 'New')")
    # Ids hard-coded in tests stay right: the reset rewinds AUTO_INCREMENT.
    check(cur.lastrowid == 4, f"new user id is {cur.lastrowid}, want 4")
    check(scalar(cur, "SELECT COUNT(*) FROM users") == 4, "want 4 users")


def test_create_user_again(cur):
    """creates a user with id 4 again"""
    test_create_user(cur)


def test_delete_cascades(cur):
    """deleting a user cascades and is audited"""
    check(scalar(cur, "SELECT COUNT(*) FROM posts") == 2, "want the 2 seeded posts")
    cur.execute("DELETE FROM users WHERE id = 1")
    check(scalar(cur, "SELECT COUNT(*) FROM posts") == 1, "the post of user 1 was not deleted")
    check(scalar(cur, "SELECT COUNT(*) FROM audit_log WHERE action = 'delete'") == 1, "the delete was not audited")


def test_triggers(cur):
    """publishing fires the triggers"""
    check(scalar(cur, "SELECT post_count(3)") == 0, "user 3 has posts already")
    cur.execute("INSERT INTO posts (user_id, title) VALUES (3, 'Kernels')")
    check(scalar(cur, "SELECT post_count(3)") == 1, "post_counts was not updated")
    check(scalar(cur, "SELECT COUNT(*) FROM active_users") == 3, "the view does not see user 3")


def test_template_is_back(cur):
    """the template is back"""
    check(scalar(cur, "SELECT COUNT(*) FROM users") == 3, "want the 3 seeded users")
    check(scalar(cur, "SELECT COUNT(*) FROM audit_log") == 2, "want the 2 seeded audit rows")
    check(scalar(cur, "SELECT COUNT(*) FROM active_users") == 2, "want 2 active users")


TESTS = [test_create_user, test_create_user_again, test_delete_cascades, test_triggers, test_template_is_back]

if __name__ == "__main__":
    sys.exit(main())
