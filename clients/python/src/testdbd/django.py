"""Django on testdbd: the test runner and pytest-django use leased
databases that already hold the migrated schema, and tests start from the
template instead of an emptied database.

Django's test runner, in settings.py:

    TEST_RUNNER = "testdbd.django.TestRunner"
    TESTDBD = {"TEMPLATE": "django-app"}      # and optionally MIGRATIONS, STRATEGY, ...

`manage.py test` then leases a database of the template, points
DATABASES["default"] at it (no CREATE DATABASE, no migrate), runs the
tests, and releases the lease, also when tests fail or the run is
interrupted. `manage.py test --parallel N` leases N databases of the same
build of the template, one per worker process, handed to the workers
through Django's clone hook (DatabaseCreation.get_test_db_clone_settings)
instead of cloning the test database.

Django's test cases behave as Django documents them; every
TransactionTestCase test (serialized_rollback or not) starts from the
template: when a test before it changed the database (a TransactionTestCase
that Django flushed, a TestCase whose rolled-back inserts moved the
AUTO_INCREMENT counters), the lease is reset first. CommittingTestCase
resets instead of flushing; RollbackTestCase resets after its class.
pytest-django: see testdbd.django_pytest.

Settings (env first, then settings.TESTDBD, then the default):
TESTDBD_ADDR/ADDR (127.0.0.1:8080), TESTDBD_TOKEN, TESTDBD_TEMPLATE/TEMPLATE,
TESTDBD_MIGRATIONS/MIGRATIONS (goose *.sql directory: the template is
ensured from it first), TESTDBD_SEED/SEED (a SQL file), TESTDBD_STRATEGY/
STRATEGY (snapshot), TESTDBD_TTL/TTL (3600), TESTDBD_WORKER/WORKER
(django-main; parallel workers 2..N use django-2, ...),
TESTDBD_PIN_TEMPLATE/PIN_TEMPLATE (true: lease the build MIGRATIONS made,
or TESTDBD_TEMPLATE_HASH), and ALIAS (default), the connection to point at
the lease.

A lease acquired outside (`eval "$(testdbd lease --template ... --format
env)"`, which sets TESTDBD_LEASE_ID) is used as it is and left to its
owner to release; parallel workers 2..N lease databases of its build.
"""

import ctypes
import multiprocessing
import os
import pathlib
import signal
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import TestCase, TransactionTestCase
from django.test import runner as django_runner
from django.test.runner import DiscoverRunner, ParallelTestSuite

from . import _cleanup
from .client import Client, Lease, TestdbdError, normalize_strategy


class _State:
    client = None
    lease = None  # the lease this process uses
    alias = DEFAULT_DB_ALIAS
    dirty = False  # whether a test changed the lease's database since its last reset
    workers = {}  # --parallel: worker number ("1", "2", ...) -> its lease
    runner_pid = None  # the process that runs the suite (and leases for its workers)


_state = _State()


def client():
    """The testdbd.Client in use (TESTDBD_ADDR, TESTDBD_TOKEN by default)."""
    if _state.client is None:
        _state.client = Client(_setting("ADDR") or None)
    return _state.client


def use_lease(lease, alias=DEFAULT_DB_ALIAS, client=None):
    """Points DATABASES[alias] (and its test database name) at a lease and
    closes the connection, so that the next query connects to the leased
    database. A non-MySQL ENGINE is replaced by django.db.backends.mysql."""
    lease = Lease(lease)
    db = settings.DATABASES[alias]
    conn = connections[alias]
    conn.close()
    values = _lease_settings(lease)
    if "mysql" not in (db.get("ENGINE") or ""):
        values["ENGINE"] = "django.db.backends.mysql"
    for d in (db, conn.settings_dict):
        d.update(values)
        d["TEST"] = {**(d.get("TEST") or {}), "NAME": lease["database"]}
    if "ENGINE" in values:
        del connections[alias]  # the next access creates a MySQL connection
    _state.lease = lease
    if client is not None:
        _state.client = client
    os.environ["TESTDBD_LEASE_ID"] = lease["id"]
    return lease


def _lease_settings(lease):
    """The DATABASES keys that point at a lease's database."""
    return {"NAME": lease["database"], "HOST": lease["host"], "PORT": str(lease["port"]),
            "USER": lease["user"], "PASSWORD": lease["password"]}


def current_lease_id():
    """The id of the lease Django uses: the one use_lease set, else
    TESTDBD_LEASE_ID."""
    if _state.lease is not None:
        return _state.lease["id"]
    lid = os.environ.get("TESTDBD_LEASE_ID")
    if not lid:
        raise TestdbdError("no testdbd lease: run the tests with TEST_RUNNER = \"testdbd.django.TestRunner\", "
                           "with pytest-django and testdbd_django = true, or under "
                           "`eval \"$(testdbd lease --template ... --format env)\"`")
    return lid


def reset(strategy=None):
    """Closes Django's connections (a reset ends them anyway) and resets the
    lease to its template; returns the report."""
    connections.close_all()
    report = client().reset(current_lease_id(), strategy)
    _state.dirty = False
    return report


class CommittingTestCase(TransactionTestCase):
    """Tests that commit freely; after each one the database is reset to the
    template (the lease's strategy, snapshot by default) instead of Django
    flushing every table."""

    def _fixture_teardown(self):
        reset()


class RollbackTestCase(TestCase):
    """Django's TestCase (each test in a transaction that is rolled back),
    plus a rollback reset after the class: AUTO_INCREMENT counters are
    rewound and anything committed anyway is restored (and named)."""

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        report = reset("STRATEGY_ROLLBACK")
        if report.get("fallback_reason"):
            print(f"\n{cls.__name__}: {report['fallback_reason']}", file=sys.stderr)


def _setting(name, default=""):
    """TESTDBD_<NAME> from the environment, else settings.TESTDBD[NAME]."""
    value = os.environ.get("TESTDBD_" + name)
    if value:
        return value
    conf = getattr(settings, "TESTDBD", None) or {}
    value = conf.get(name, default)
    return default if value is None else value


def _bool(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def acquire():
    """Ensures the configured template (when MIGRATIONS is set) and leases a
    database of it; the lease is released at exit if nothing released it
    before. Returns the lease."""
    c = client()
    template = _setting("TEMPLATE")
    if not template:
        raise TestdbdError("no testdbd template configured: set TESTDBD = {\"TEMPLATE\": ...} in the settings "
                           "or TESTDBD_TEMPLATE")
    pin = _bool(_setting("PIN_TEMPLATE", True))
    migrations = _setting("MIGRATIONS")
    if migrations:
        seed = _setting("SEED")
        seed_sql = pathlib.Path(seed).read_text(encoding="utf-8") if seed else ""
        built_hash = c.ensure_template(template, pathlib.Path(migrations), seed_sql=seed_sql)["hash"]
    else:
        # What `testdbd template ensure --format env` exported, if anything.
        built_hash = _setting("TEMPLATE_HASH") or None
    lease = c.acquire(template, _setting("WORKER", "django-main"), normalize_strategy(_setting("STRATEGY")),
                      ttl_seconds=int(_setting("TTL", 3600)),
                      template_hash=built_hash if pin else None)
    _cleanup.hold(c, lease["id"])
    return lease


def release(lease_id):
    try:
        client().release(lease_id)
    finally:
        _cleanup.forget(lease_id)
        if _state.lease is not None and _state.lease["id"] == lease_id:
            _state.lease = None
            os.environ.pop("TESTDBD_LEASE_ID", None)


def _release_all(lease_ids):
    """Releases every lease, the first error raised after trying them all."""
    first = None
    for lid in lease_ids:
        try:
            release(lid)
        except Exception as e:  # noqa: BLE001 - try the others first
            first = first or e
    if first is not None:
        raise first


def _worker_key(number):
    """The sticky worker key of parallel worker number (2, 3, ...):
    WORKER with its "-main" replaced, django-2, django-3, ..."""
    base = _setting("WORKER", "django-main")
    if base.endswith("-main"):
        base = base[:-len("-main")]
    return f"{base}-{number}"


def _acquire_like(lease, number):
    """Leases a database of the same template build and strategy as lease,
    for parallel worker number."""
    return client().acquire(lease["template"], _worker_key(number), lease.get("strategy") or None,
                            ttl_seconds=int(_setting("TTL", 3600)), template_hash=lease.get("template_hash") or None)


def _lease_workers(lease, n):
    """The leases of --parallel n: worker 1 uses the runner's own lease
    (the runner process runs no test while the workers do), workers 2..n
    one more each, acquired at once. All or none: on an error the ones
    acquired are released."""
    workers = {"1": lease}
    with ThreadPoolExecutor(max_workers=n - 1) as pool:
        futures = {str(i): pool.submit(_acquire_like, lease, i) for i in range(2, n + 1)}
    errors = []
    for number, f in futures.items():
        try:
            workers[number] = f.result()
            _cleanup.hold(client(), workers[number]["id"])  # here: the main thread installs the signal handlers
        except Exception as e:  # noqa: BLE001 - release the others, then raise
            errors.append(e)
    if errors:
        try:
            _release_all(w["id"] for k, w in workers.items() if k != "1")
        except Exception:  # noqa: BLE001 - the first error says more; the TTL takes these back
            pass
        raise TestdbdError(f"--parallel {n}: cannot lease a database for every worker: {errors[0]}") from errors[0]
    return workers


class _LeaseCreation:
    """Mixed into the leased connection's DatabaseCreation for --parallel:
    Django asks it for each worker's "clone" of the test database as the
    worker starts (django.test.runner._init_worker, or
    setup_worker_connection on Django 4.1+); the answer is that worker's
    lease, and from then on that process resets and uses it. Nothing is
    cloned or destroyed."""

    _testdbd = True

    def get_test_db_clone_settings(self, suffix):
        lease = _state.workers.get(str(suffix))
        if lease is None:  # not a worker of this run
            return super().get_test_db_clone_settings(suffix)
        if os.getpid() != _state.runner_pid:  # a worker process starting: it uses this lease from now on
            if lease is not _state.lease:
                _state.lease, _state.dirty = lease, False  # a fresh lease (worker 1 keeps the runner's)
            os.environ["TESTDBD_LEASE_ID"] = lease["id"]
        return {**self.connection.settings_dict, **_lease_settings(lease)}

    def _clone_test_db(self, suffix, verbosity, keepdb=False):
        pass  # each worker has a lease: nothing to copy

    def _destroy_test_db(self, test_database_name, verbosity):
        pass  # leases are released, never dropped


def _install_creation(conn):
    base = type(conn.creation)
    if not getattr(base, "_testdbd", False):
        conn.creation = type("Testdbd" + base.__name__, (_LeaseCreation, base), {})(conn)


def _watch(test):
    """Makes a TransactionTestCase test on the leased database start from the
    template: reset first when a test before it changed the database. A
    TestCase test counts as a change (its rolled-back inserts moved the
    AUTO_INCREMENT counters); Django's own steps (fixtures, the flush after
    the test) are left as they are."""
    if not isinstance(test, TransactionTestCase) or "_pre_setup" in vars(test):
        return
    databases = getattr(test, "databases", ())
    if databases != "__all__" and _state.alias not in databases:
        return
    transactional = not isinstance(test, TestCase)
    pre_setup, post_teardown = test._pre_setup, test._post_teardown

    def _pre_setup():
        if transactional and _state.dirty:
            reset("STRATEGY_SNAPSHOT")
        pre_setup()

    def _post_teardown():
        _state.dirty = True  # until a reset says otherwise (CommittingTestCase's, in its teardown)
        post_teardown()

    test._pre_setup, test._post_teardown = _pre_setup, _post_teardown


def _tests(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _tests(test)
        else:
            yield test


class TestSuite(unittest.TestSuite):
    """The runner's test suite, and each parallel worker's share of it:
    unittest's, plus a reset before a TransactionTestCase test when the
    database is not the template's (see _watch)."""

    __test__ = False

    def run(self, result, debug=False):
        for test in _tests(self):
            _watch(test)
        return super().run(result, debug)


def _init_worker(*args, **kwargs):
    """Django's worker initialization, in a worker that dies with the
    runner: the runner releases every lease when it ends (also of SIGTERM
    or SIGHUP), and a worker left running would go on testing on a released
    database."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() != _state.runner_pid:
            os._exit(1)  # the runner is gone already
    ParallelTestSuite.init_worker(*args, **kwargs)
    number = str(getattr(django_runner, "_worker_id", ""))
    if _state.workers and number not in _state.workers:
        # multiprocessing.Pool starts a worker beyond the first N only to
        # replace one that died, in the middle of a test: that test's result
        # never comes, and Django's runner would wait for it forever.
        print(f"\ntestdbd: a worker process of the parallel run died in the middle of a test (os._exit, a crash, "
              f"SIGKILL?); Django's runner would wait for its result forever: stopping the run (SIGTERM to "
              f"{_state.runner_pid}), which releases every lease", file=sys.stderr, flush=True)
        os.kill(_state.runner_pid, signal.SIGTERM)
        time.sleep(10)  # until the runner's end ends this process too
        os._exit(1)


class _ParallelTestSuite(ParallelTestSuite):
    """Django's ParallelTestSuite, whose workers die with the runner."""

    init_worker = _init_worker


class _TestLoader(unittest.TestLoader):
    # Django's runner regroups the suites the loader builds by their class
    # (django.test.runner.partition_suite_by_type): the same class all along.
    suiteClass = TestSuite


class TestRunner(DiscoverRunner):
    """Django's DiscoverRunner on testdbd leases: the connection ALIAS
    (default) uses a leased database of the template as it is; other
    databases are set up as Django does. With --parallel N, N leases of the
    same template build, one per worker process."""

    __test__ = False
    test_suite = TestSuite
    test_loader = _TestLoader()
    parallel_test_suite = _ParallelTestSuite

    def setup_databases(self, **kwargs):
        alias = _setting("ALIAS", DEFAULT_DB_ALIAS)
        parallel = getattr(self, "parallel", 1) or 1
        if parallel > 1 and multiprocessing.get_start_method() != "fork":
            raise TestdbdError(
                f"testdbd.django.TestRunner --parallel needs multiprocessing's fork start method, and this "
                f"process uses {multiprocessing.get_start_method()}: call multiprocessing.set_start_method(\"fork\") "
                "in manage.py before Django runs, or run without --parallel (or with pytest-xdist)")
        adopted = os.environ.get("TESTDBD_LEASE_ID")
        if adopted:
            lease, own = client().get_lease(adopted), False
        else:
            lease, own = acquire(), True
        workers = {}
        try:
            use_lease(lease, alias)
            _state.alias, _state.dirty, _state.runner_pid = alias, not own, os.getpid()
            if self.verbosity >= 1:
                print(f"testdbd: database {lease['database']} (lease {lease['id']}, template {lease['template']}, "
                      f"strategy {lease['strategy'][9:].lower()})", file=sys.stderr)
            if parallel > 1:
                workers = _lease_workers(lease, parallel)
                _state.workers = workers
                _install_creation(connections[alias])
                if self.verbosity >= 1:
                    print(f"testdbd: --parallel {parallel}: " + ", ".join(
                        f"worker {k} on {w['database']} (lease {w['id']})" for k, w in workers.items()), file=sys.stderr)
            old = None
            aliases = kwargs.get("aliases")
            rest = {a: (aliases[a] if isinstance(aliases, dict) else True) for a in aliases or () if a != alias}
            if rest:  # other databases the tests use: as Django sets them up
                serialized = set(kwargs.get("serialized_aliases") or ()) - {alias}
                old = super().setup_databases(aliases=rest, serialized_aliases=serialized)
        except BaseException:
            _state.workers = {}
            mine = [w["id"] for k, w in workers.items() if k != "1"] + ([lease["id"]] if own else [])
            _release_all(mine)
            raise
        return (lease, own, old, workers)

    def suite_result(self, suite, result, **kwargs):
        failures = super().suite_result(suite, result, **kwargs)
        if not failures and getattr(result, "shouldStop", False):
            # Ctrl-C stops unittest's run cleanly, and Django would exit 0
            # with the tests not run.
            print("testdbd: the run was interrupted: exit status 1", file=sys.stderr)
            return 1
        return failures

    def teardown_databases(self, old_config, **kwargs):
        lease, own, old, workers = old_config
        try:
            if old is not None:
                super().teardown_databases(old, **kwargs)
        finally:
            connections.close_all()
            _state.workers = {}
            _release_all([w["id"] for k, w in workers.items() if k != "1"] + ([lease["id"]] if own else []))
