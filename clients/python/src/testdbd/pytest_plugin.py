"""pytest plugin: one testdbd lease per pytest-xdist worker, a reset after
each test.

Installed with the package (entry point pytest11), it does nothing until a
test asks for one of its fixtures:

- testdbd_lease (session): this worker's lease (testdbd.Lease: host, port,
  user, password, database, url, ...), acquired on first use with the
  worker key "<prefix>-gw0", "<prefix>-gw1", ... ("<prefix>-main" without
  xdist), after ensuring the template when migrations are configured.
  Released at the end of the session, also when tests fail or the run is
  interrupted.
- testdbd_db: the same lease for one test; the database is reset to the
  template after the test (the lease's strategy).
- testdbd_conn: a PyMySQL connection (autocommit) to it, closed after the
  test, then the reset.
- testdbd_tx: a PyMySQL connection in a transaction that is rolled back
  after the test, then a rollback reset (which rewinds AUTO_INCREMENT and
  checks that nothing was committed; a TestdbdWarning names what was).
- testdbd_client (session): the testdbd.Client; testdbd_template (session):
  the template.

Settings, each from the command line, else the environment, else the ini
file ([pytest] in pytest.ini, or [tool.pytest.ini_options]):

    --testdbd-addr        TESTDBD_ADDR           testdbd_addr          127.0.0.1:8080
                          TESTDBD_TOKEN                                (bearer token)
    --testdbd-template    TESTDBD_TEMPLATE       testdbd_template      (required to lease)
    --testdbd-migrations  TESTDBD_MIGRATIONS     testdbd_migrations    goose *.sql directory
    --testdbd-seed        TESTDBD_SEED           testdbd_seed          SQL file run after them
    --testdbd-strategy    TESTDBD_STRATEGY       testdbd_strategy      snapshot
    --testdbd-ttl         TESTDBD_TTL            testdbd_ttl           3600 (seconds, renewed)
    --testdbd-worker-prefix TESTDBD_WORKER_PREFIX testdbd_worker_prefix pytest
    --testdbd-pin-template TESTDBD_PIN_TEMPLATE  testdbd_pin_template  true
    --testdbd-django      TESTDBD_DJANGO         testdbd_django        false

Relative paths in the ini file are relative to the ini file's directory;
on the command line and in the environment, to the current directory.
"""

import os
import pathlib
import re
import time
import warnings

import pytest

from . import _cleanup, worker_key
from .client import DEFAULT_ADDR, Client, TestdbdError, normalize_strategy


class TestdbdWarning(UserWarning):
    """A test on testdbd_tx committed something that the rollback could not
    undo (the rollback reset restored it and names it), or the worker's
    lease ended before the session did (the warning says why)."""

    __test__ = False


# name: (env, help, default)
_SETTINGS = {
    "addr": ("TESTDBD_ADDR", "the daemon's REST address (host:port or URL)", DEFAULT_ADDR),
    "template": ("TESTDBD_TEMPLATE", "the template each worker leases a database of", ""),
    "migrations": ("TESTDBD_MIGRATIONS", "a directory of goose *.sql migrations: the template is "
                   "built from them (uploaded) before the first lease, once per content", ""),
    "seed": ("TESTDBD_SEED", "a SQL file run after the migrations when the template is built", ""),
    "strategy": ("TESTDBD_STRATEGY", "the lease's reset strategy: truncate, snapshot or rollback", "snapshot"),
    "ttl": ("TESTDBD_TTL", "the lease's time to live in seconds, renewed as tests run", "3600"),
    "worker_prefix": ("TESTDBD_WORKER_PREFIX", "the worker keys' prefix: <prefix>-gw0, <prefix>-main", "pytest"),
    "pin_template": ("TESTDBD_PIN_TEMPLATE", "lease only databases of the template build this run ensured "
                     "(without testdbd_migrations: of TESTDBD_TEMPLATE_HASH, as `testdbd template ensure "
                     "--format env` exports it)", "true"),
    "django": ("TESTDBD_DJANGO", "with pytest-django: point Django's default database at each worker's "
               "lease and reset it after each database test", "false"),
}
_settings_key = pytest.StashKey()
_INLINE_COMMENT = re.compile(r"\s[#;]")
_BOOL = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False, "": False}


def pytest_addoption(parser):
    group = parser.getgroup("testdbd", "testdbd: a database per worker, reset between tests")
    for name, (env, help_, default) in _SETTINGS.items():
        flag = "--testdbd-" + name.replace("_", "-")
        if name in ("pin_template", "django"):
            group.addoption(flag, action="store_const", const="true", dest="testdbd_" + name, default=None,
                            help=f"{help_} (env {env}, ini testdbd_{name})")
        else:
            group.addoption(flag, action="store", dest="testdbd_" + name, default=None, metavar=name.upper(),
                            help=f"{help_} (env {env}, ini testdbd_{name}; default {default or 'none'})")
        parser.addini("testdbd_" + name, help=f"testdbd: {help_}", default="")


class Settings:
    """The plugin's settings, resolved: command line, environment, ini file,
    default."""

    def __init__(self, config):
        self._config = config
        values, origins = {}, {}
        for name, (env, _, default) in _SETTINGS.items():
            value, origin = config.getoption("testdbd_" + name), "cli"
            if value is None and os.environ.get(env):
                value, origin = os.environ[env], "env"
            if value is None and config.getini("testdbd_" + name):
                value, origin = config.getini("testdbd_" + name), "ini"
                if _INLINE_COMMENT.search(value):
                    raise pytest.UsageError(
                        f"testdbd: testdbd_{name} = {value!r} in {getattr(config, 'inipath', None) or 'the ini file'}: "
                        "ini values cannot carry a comment after them (pytest reads it as part of the value); "
                        "put the comment on a line of its own")
            if value is None:
                value, origin = default, "default"
            values[name], origins[name] = str(value).strip(), origin
        self.addr = values["addr"]
        self.template = values["template"]
        self.migrations = self._path(values["migrations"], origins["migrations"])
        self.seed = self._path(values["seed"], origins["seed"])
        try:
            self.strategy = normalize_strategy(values["strategy"]) or "STRATEGY_SNAPSHOT"
            self.ttl = int(values["ttl"])
        except ValueError as e:
            raise pytest.UsageError(f"testdbd: {e}") from None
        self.worker_prefix = values["worker_prefix"] or "pytest"
        self.pin_template = self._bool("pin_template", values["pin_template"])
        self.django = self._bool("django", values["django"])

    def _path(self, value, origin):
        if not value:
            return None
        p = pathlib.Path(value).expanduser()
        if not p.is_absolute():
            inipath = getattr(self._config, "inipath", None)
            base = inipath.parent if origin == "ini" and inipath else pathlib.Path(self._config.invocation_params.dir)
            p = base / p
        return p

    @staticmethod
    def _bool(name, value):
        try:
            return _BOOL[value.lower()]
        except KeyError:
            raise pytest.UsageError(f"testdbd: {name}={value!r}: want true or false") from None

    def describe(self):
        what = f"daemon {self.addr}"
        if self.template:
            what += f", template {self.template}"
            if self.migrations:
                what += f" (built from {self.migrations})"
            p = self.worker_prefix
            keys = f"{p}-gw0, {p}-gw1, ..." if self._config.getoption("numprocesses", None) else worker_key(p)
            what += f", strategy {self.strategy[9:].lower()}, worker key {keys}"
            if self.pin_template and (self.migrations or os.environ.get("TESTDBD_TEMPLATE_HASH")):
                what += ", pinned"
        return what


class Worker:
    """This process's lease: acquired once, reset after tests, renewed before
    its TTL runs out, released at the end."""

    def __init__(self, settings, client):
        self.settings = settings
        self.client = client
        self.template = None
        self.lease = None
        self._renewed = 0.0

    def ensure_template(self):
        s = self.settings
        if self.template is None:
            if not s.template:
                pytest.fail("testdbd: no template configured: set testdbd_template in the ini file, "
                            "--testdbd-template or TESTDBD_TEMPLATE", pytrace=False)
            if s.migrations:
                seed = s.seed.read_text(encoding="utf-8") if s.seed else ""
                self.template = self.client.ensure_template(s.template, s.migrations, seed_sql=seed)
            else:
                self.template = self.client.get_template(s.template)
        return self.template

    def acquire(self):
        s = self.settings
        template = self.ensure_template()
        pin = None
        if s.pin_template:
            pin = template.get("hash") if s.migrations else (os.environ.get("TESTDBD_TEMPLATE_HASH") or None)
        self.lease = self.client.acquire(s.template, worker_key(s.worker_prefix), s.strategy,
                                         ttl_seconds=s.ttl, template_hash=pin)
        _cleanup.hold(self.client, self.lease.id)
        self._renewed = time.monotonic()
        return self.lease

    def reset(self, strategy=None):
        """Resets the lease now; renews it when half its TTL has passed."""
        report = self.client.reset(self.lease.id, strategy)
        if time.monotonic() - self._renewed > self.lease.get("ttl_seconds", self.settings.ttl) / 2:
            self.client.renew(self.lease.id)
            self._renewed = time.monotonic()
        return report

    def release(self):
        """Releases the lease. One that testdbd ended before (its TTL ran
        out, its database outgrew the daemon's --lease-space, its server
        died, the daemon restarted) explains the errors its tests got on
        their connections: a TestdbdWarning says why it ended."""
        if self.lease is not None:
            lease, self.lease = self.lease, None
            try:
                final = self.client.release(lease.id)
            finally:
                _cleanup.forget(lease.id)
            reason = final.get("ended_reason") or ""
            if final.get("state") != "released" or (reason and not reason.startswith("released")):
                warnings.warn(TestdbdWarning(
                    f"testdbd: lease {lease.id} (database {lease.get('database')}) ended before the session did: {reason}"),
                    stacklevel=1)
            return final
        return None


def pytest_configure(config):
    settings = Settings(config)
    config.stash[_settings_key] = settings
    if settings.template and config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        _cleanup.interrupt_on_termination()
    if settings.django:
        if not config.pluginmanager.hasplugin("django"):
            raise pytest.UsageError("testdbd_django is set but pytest-django is not installed")
        from . import django_pytest

        if not config.pluginmanager.is_registered(django_pytest):
            # Registered now, after pytest-django, so that its
            # django_db_setup fixture takes precedence over pytest-django's.
            config.pluginmanager.register(django_pytest, "testdbd.django_pytest")


def pytest_report_header(config):
    settings = config.stash.get(_settings_key, None)
    if settings is not None and settings.template:
        return "testdbd: " + settings.describe()
    return None


@pytest.fixture(scope="session")
def testdbd_client(pytestconfig):
    """The testdbd.Client of the configured daemon."""
    return Client(pytestconfig.stash[_settings_key].addr)


@pytest.fixture(scope="session")
def _testdbd_worker(pytestconfig, testdbd_client):
    worker = Worker(pytestconfig.stash[_settings_key], testdbd_client)
    yield worker
    worker.release()


@pytest.fixture(scope="session")
def testdbd_template(_testdbd_worker):
    """The template this session leases from (ensured first when
    testdbd_migrations is set)."""
    return _testdbd_worker.ensure_template()


@pytest.fixture(scope="session")
def testdbd_lease(_testdbd_worker):
    """This worker's lease for the whole session. Nothing resets it between
    tests: use testdbd_db, testdbd_conn or testdbd_tx for that."""
    return _testdbd_worker.lease or _testdbd_worker.acquire()


@pytest.fixture
def testdbd_db(_testdbd_worker, testdbd_lease):
    """The worker's lease; after the test its database is reset to the
    template with the lease's strategy."""
    yield testdbd_lease
    _testdbd_worker.reset()


@pytest.fixture
def testdbd_conn(testdbd_db):
    """A PyMySQL connection in autocommit mode; after the test it is closed
    and the database reset."""
    conn = testdbd_db.connect(autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def testdbd_tx(_testdbd_worker, testdbd_lease):
    """A PyMySQL connection inside a transaction, rolled back after the test;
    then a rollback reset rewinds the AUTO_INCREMENT counters and checks
    that nothing was committed (a TestdbdWarning names the tables that
    were, and they are restored)."""
    conn = testdbd_lease.connect(autocommit=False)
    try:
        yield conn
    finally:
        try:
            conn.rollback()
            conn.close()
        except Exception:  # noqa: BLE001 - the reset ends the session anyway
            pass
        report = _testdbd_worker.reset("STRATEGY_ROLLBACK")
        # A test that committed turns the rollback reset into a restore
        # (its strategy is then snapshot); a schema change is put back too.
        if report.get("strategy") != "STRATEGY_ROLLBACK" or report.get("schema_changes"):
            warnings.warn(TestdbdWarning(f"testdbd: {report.get('fallback_reason') or report.get('schema_changes')}"),
                          stacklevel=1)


__all__ = ["TestdbdWarning", "TestdbdError", "Settings", "Worker"]
