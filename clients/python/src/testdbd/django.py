"""Django on testdbd: the test runner and pytest-django use a leased
database that already holds the migrated schema, and tests are followed by
a reset to the template instead of Django's flush.

Django's test runner, in settings.py:

    TEST_RUNNER = "testdbd.django.TestRunner"
    TESTDBD = {"TEMPLATE": "django-app"}      # and optionally MIGRATIONS, STRATEGY, ...

`manage.py test` then leases a database of the template, points
DATABASES["default"] at it (no CREATE DATABASE, no migrate), runs the
tests, and releases the lease, also when tests fail or the run is
interrupted. CommittingTestCase and RollbackTestCase reset the database
after each test, or after each class. pytest-django: see
testdbd.django_pytest.

Settings (env first, then settings.TESTDBD, then the default):
TESTDBD_ADDR/ADDR (127.0.0.1:8080), TESTDBD_TOKEN, TESTDBD_TEMPLATE/TEMPLATE,
TESTDBD_MIGRATIONS/MIGRATIONS (goose *.sql directory: the template is
ensured from it first), TESTDBD_SEED/SEED (a SQL file), TESTDBD_STRATEGY/
STRATEGY (snapshot), TESTDBD_TTL/TTL (3600), TESTDBD_WORKER/WORKER
(django-main), TESTDBD_PIN_TEMPLATE/PIN_TEMPLATE (true: lease the build
MIGRATIONS made, or TESTDBD_TEMPLATE_HASH), and ALIAS
(default), the connection to point at the lease.

A lease acquired outside (`eval "$(testdbd lease --template ... --format
env)"`, which sets TESTDBD_LEASE_ID) is used as it is and left to its
owner to release.
"""

import os
import pathlib
import sys

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import TestCase, TransactionTestCase
from django.test.runner import DiscoverRunner

from . import _cleanup
from .client import Client, Lease, TestdbdError, normalize_strategy


class _State:
    client = None
    lease = None


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
    values = {"NAME": lease["database"], "HOST": lease["host"], "PORT": str(lease["port"]),
              "USER": lease["user"], "PASSWORD": lease["password"]}
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
    return client().reset(current_lease_id(), strategy)


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


class TestRunner(DiscoverRunner):
    """Django's DiscoverRunner on a testdbd lease: the connection ALIAS
    (default) uses a leased database of the template as it is; other
    databases are set up as Django does. Runs serially: use pytest-xdist
    for parallel runs (Django's --parallel clones databases, which a lease
    cannot)."""

    __test__ = False

    def setup_databases(self, **kwargs):
        alias = _setting("ALIAS", DEFAULT_DB_ALIAS)
        if getattr(self, "parallel", 1) > 1:
            raise TestdbdError("testdbd.django.TestRunner runs serially: drop --parallel "
                               "(run in parallel with pytest-xdist and pytest-django instead)")
        adopted = os.environ.get("TESTDBD_LEASE_ID")
        if adopted:
            lease, own = client().get_lease(adopted), False
        else:
            lease, own = acquire(), True
        try:
            use_lease(lease, alias)
            if self.verbosity >= 1:
                print(f"testdbd: database {lease['database']} (lease {lease['id']}, template {lease['template']}, "
                      f"strategy {lease['strategy'][9:].lower()})", file=sys.stderr)
            old = None
            aliases = kwargs.get("aliases")
            rest = {a: (aliases[a] if isinstance(aliases, dict) else True) for a in aliases or () if a != alias}
            if rest:  # other databases the tests use: as Django sets them up
                serialized = set(kwargs.get("serialized_aliases") or ()) - {alias}
                old = super().setup_databases(aliases=rest, serialized_aliases=serialized)
        except BaseException:
            if own:
                release(lease["id"])
            raise
        return (lease, own, old)

    def teardown_databases(self, old_config, **kwargs):
        lease, own, old = old_config
        try:
            if old is not None:
                super().teardown_databases(old, **kwargs)
        finally:
            connections.close_all()
            if own:
                release(lease["id"])
